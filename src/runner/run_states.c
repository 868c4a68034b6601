/*-------------------------------------------------------------------------
 *
 * run_states.c
 *	  A node's start in adk.run_states (docs/runs.md "Where the run
 *	  stands", sql/install/62_hitl.sql): every node activation of every
 *	  invocation has a row, the root agent's node, each task and each
 *	  single_turn node it runs, 'running' from its start.
 *
 * A node's row is written as its frame is pushed (agents.c), one INSERT
 * ... ON CONFLICT, adk._node_start: each task and single_turn node's, and
 * the first frame's of a queued run, whose steps commit as it goes (a
 * worker may die mid-node: its retry counts the attempt on this row).
 * adk_run's invocation is one transaction, the turn's, which nobody else
 * sees before it ends: its root row is written with its end.
 *
 * What each node became is written as the invocation ends, by the
 * statement that ends it (adk._invocation_end): the run notes the last
 * event each of its nodes wrote as it stores it (adk_node_event), and the
 * end writes each node's status, agent and time from that note, as
 * adk._derive_run_states reads them from the events -- no statement more
 * per turn, no read of the events (test/bench/turn_cost.sh).  An
 * invocation whose rows the events trigger refreshed for a pause or an
 * answer (HITL, hitl.c) gets the rows of the nodes it ran, and of those
 * its answers resumed, refreshed from the events instead (and a queued
 * run's retry, whose earlier attempts' nodes it did not see, all of its
 * rows).  In between, the events trigger refreshes the rows a pause, an
 * answer or a node's output changes.  A graph workflow's node also gets
 * what triggered it, its branch and the graph hash as it starts
 * (adk_node_start_workflow), which its events carry too (emit.c).
 *
 * A queued run's retry that starts a node its earlier attempts started
 * counts one more attempt; a resume after a human's answer goes on in the
 * row it finds (the same attempt).
 *
 * IDENTIFICATION
 *	  src/runner/run_states.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/owner.h"
#include "common/spi_plans.h"
#include "common/jsonb_util.h"
#include "runner/runner.h"

/* The last event a node of the run wrote (AdkRun.node_ends) */
typedef struct NodeEnd
{
	char	   *path;
	char	   *agent;
	TimestampTz time;
	char	   *error_code;		/* "" for none */
	char	   *branch;			/* NULL for none */
} NodeEnd;

#define NODE_START_SQL \
	"SELECT adk._node_start($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"

/*
 * The node at path, run by agent, starts: its row 'running'.  first: the
 * run's first frame, whose input is the user's content (a node below the
 * root -- a task the user's message goes on in -- finds its delegating
 * call's arguments in the store); adk_run writes a root's row with its
 * end.
 */
void
adk_node_start(AdkRun *run, const char *path, const char *agent, bool first)
{
	/* adk_run's root row comes with its end (see the file header) */
	if (run->invocation_id == NULL ||
		(first && !run->queued && strchr(path, '@') == NULL))
		return;
	adk_node_start_input(run, path, agent,
						 first ? run->input.user_content : NULL);
}

/*
 * The node at path starts with input; NULL input: what adk._node_start
 * finds for the path.
 */
void
adk_node_start_input(AdkRun *run, const char *path, const char *agent,
					 Jsonb *input)
{
	adk_node_start_workflow(run, path, agent, input, NULL, NULL, NULL);
}

/*
 * A graph workflow's node starts (workflow.c): its row, with its input
 * (which the events do not hold), the node that triggered it, its branch
 * and the graph hash it runs under -- what its events carry too, so
 * adk_rebuild_run_states derives the same.
 */
void
adk_node_start_workflow(AdkRun *run, const char *path, const char *agent,
						Jsonb *input, const char *triggered_by,
						const char *branch, const char *graph_hash)
{
	Oid			types[11] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	JSONBOID, BOOLOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[11];
	char		nulls[11] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	AdkOwnerSave save;

	if (run->invocation_id == NULL)
		return;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	args[4] = CStringGetTextDatum(path);
	args[5] = CStringGetTextDatum(agent);
	args[6] = input ? JsonbPGetDatum(input) : (Datum) 0;
	if (input == NULL)
		nulls[6] = 'n';
	args[7] = BoolGetDatum(run->retried);
	args[8] = triggered_by ? CStringGetTextDatum(triggered_by) : (Datum) 0;
	nulls[8] = triggered_by ? ' ' : 'n';
	args[9] = branch ? CStringGetTextDatum(branch) : (Datum) 0;
	nulls[9] = branch ? ' ' : 'n';
	args[10] = graph_hash ? CStringGetTextDatum(graph_hash) : (Datum) 0;
	nulls[10] = graph_hash ? ' ' : 'n';
	run->node_rows = true;
	adk_owner_spi_begin(&save);
	if (adk_spi_exec(NODE_START_SQL, 11, types, args, nulls, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the start of node \"%s\"", path);
	adk_owner_spi_end(&save);
}

/*
 * An event of the run is stored (emit.c): note it as the last of its node
 * -- node_info's path, else its author, as adk._node_path reads it --
 * unless the user wrote it.  In the run's memory: a queued run ends in a later
 * transaction.
 */
void
adk_node_event(AdkRun *run, Jsonb *event, TimestampTz time)
{
	JsonbValue *author = adk_jsonb_get(&event->root, "author");
	JsonbValue *error = adk_jsonb_get(&event->root, "error_code");
	JsonbValue *branch = adk_jsonb_get(&event->root, "branch");
	JsonbValue *info = adk_jsonb_get(&event->root, "node_info");
	JsonbValue *p = (info != NULL && info->type == jbvBinary) ?
		adk_jsonb_get(info->val.binary.data, "path") : NULL;
	char	   *path;
	MemoryContext old;
	NodeEnd    *n = NULL;
	ListCell   *lc;

	if (author == NULL || author->type != jbvString || author->val.string.len == 0 ||
		(author->val.string.len == 4 &&
		 memcmp(author->val.string.val, "user", 4) == 0))
		return;
	if (p != NULL && p->type == jbvString)
		path = pnstrdup(p->val.string.val, p->val.string.len);
	else
		path = pnstrdup(author->val.string.val, author->val.string.len);
	old = MemoryContextSwitchTo(run->run_cxt);
	foreach(lc, run->node_ends)
	{
		if (strcmp(((NodeEnd *) lfirst(lc))->path, path) == 0)
		{
			n = (NodeEnd *) lfirst(lc);
			pfree(n->agent);
			pfree(n->error_code);
			if (n->branch)
				pfree(n->branch);
			break;
		}
	}
	if (n == NULL)
	{
		n = palloc(sizeof(NodeEnd));
		n->path = pstrdup(path);
		run->node_ends = lappend(run->node_ends, n);
	}
	n->agent = pnstrdup(author->val.string.val, author->val.string.len);
	n->time = time;
	n->error_code = (error != NULL && error->type == jbvString) ?
		pnstrdup(error->val.string.val, error->val.string.len) : pstrdup("");
	n->branch = (branch != NULL && branch->type == jbvString) ?
		pnstrdup(branch->val.string.val, branch->val.string.len) : NULL;
	MemoryContextSwitchTo(old);
}

/*
 * The run's nodes as adk._invocation_end takes them: their paths, the
 * author, time, error_code ("" for none) and branch (NULL for none) of
 * each one's last event -- *branches (Datum) 0 when none has a branch.
 * True when no row of the invocation can exist yet: the run wrote none as
 * a node started, and no event of a node's output or a pause made the
 * events trigger derive them (no node below the root ran: hitl.c
 * refreshes a paused or resumed invocation's rows itself).
 */
bool
adk_node_ends(AdkRun *run, Datum *paths, Datum *agents, Datum *times,
			  Datum *errors, Datum *branches)
{
	int			n = list_length(run->node_ends);
	Datum	   *p = palloc(sizeof(Datum) * (n + 1));
	Datum	   *a = palloc(sizeof(Datum) * (n + 1));
	Datum	   *t = palloc(sizeof(Datum) * (n + 1));
	Datum	   *e = palloc(sizeof(Datum) * (n + 1));
	Datum	   *b = palloc(sizeof(Datum) * (n + 1));
	bool	   *bnull = palloc(sizeof(bool) * (n + 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int			i = 0;
	bool		any_branch = false;
	ListCell   *lc;

	foreach(lc, run->node_ends)
	{
		NodeEnd    *ne = (NodeEnd *) lfirst(lc);

		p[i] = CStringGetTextDatum(ne->path);
		a[i] = CStringGetTextDatum(ne->agent);
		t[i] = TimestampTzGetDatum(ne->time);
		e[i] = CStringGetTextDatum(ne->error_code);
		bnull[i] = ne->branch == NULL;
		b[i] = ne->branch ? CStringGetTextDatum(ne->branch) : (Datum) 0;
		any_branch |= ne->branch != NULL;
		i++;
	}
	*paths = PointerGetDatum(construct_array(p, n, TEXTOID, -1, false, TYPALIGN_INT));
	*agents = PointerGetDatum(construct_array(a, n, TEXTOID, -1, false, TYPALIGN_INT));
	*times = PointerGetDatum(construct_array(t, n, TIMESTAMPTZOID, sizeof(TimestampTz),
											 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	*errors = PointerGetDatum(construct_array(e, n, TEXTOID, -1, false, TYPALIGN_INT));
	/* none (a plain turn's root has no branch): (Datum) 0, SQL NULL */
	*branches = !any_branch ? (Datum) 0 :
		PointerGetDatum(construct_md_array(b, bnull, 1, dims, lbs, TEXTOID,
										   -1, false, TYPALIGN_INT));
	return !run->node_rows;
}

/*
 * The paths of the nodes the run wrote events in, and the paths in more
 * (char *), as a text[] (hitl.c: the rows a resumed or paused run brings
 * up to date).
 */
Datum
adk_node_paths(AdkRun *run, List *more)
{
	int			n = list_length(run->node_ends) + list_length(more);
	Datum	   *p = palloc(sizeof(Datum) * (n + 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, run->node_ends)
		p[i++] = CStringGetTextDatum(((NodeEnd *) lfirst(lc))->path);
	foreach(lc, more)
		p[i++] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(p, n, TEXTOID, -1, false, TYPALIGN_INT));
}
