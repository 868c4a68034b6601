/*-------------------------------------------------------------------------
 *
 * prompt_instruction.c
 *	  The system instruction of a request, and the generation config that
 *	  carries it.
 *
 * As ADK builds them: the agent's instruction with its {key} / {key?}
 * placeholders filled from the session state, ADK's identity instruction,
 * its transfer instruction when the agent can transfer, and what the
 * built-in tools add (builtin_tools.c).  flow.c's requests and adk_prompt
 * (prompt_sql.c) both build theirs here.
 *
 * IDENTIFICATION
 *	  src/runner/prompt_instruction.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "utils/builtins.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "runner/builtin_tools.h"
#include "runner/runner.h"
#include "store/session_read.h"

/*
 * ADK's _is_valid_state_name: an identifier, or "app:", "user:" or
 * "temp:" and an identifier.
 */
static bool
is_state_name(const char *key)
{
	const char *colon = strchr(key, ':');
	const char *p;

	if (colon != NULL)
	{
		size_t		n = colon - key;

		if (!((n == 3 && strncmp(key, "app", 3) == 0) ||
			  (n == 4 && strncmp(key, "user", 4) == 0) ||
			  (n == 4 && strncmp(key, "temp", 4) == 0)))
			return false;
		key = colon + 1;
	}
	if (!(isalpha((unsigned char) *key) || *key == '_'))
		return false;
	for (p = key + 1; *p; p++)
		if (!(isalnum((unsigned char) *p) || *p == '_'))
			return false;
	return true;
}

/*
 * The system instruction, as ADK builds it: the agent's instruction with
 * {key} / {key?} placeholders filled from the session state (ADK's
 * pattern and rules: a missing optional key becomes empty, what is not a
 * state name stays as written, and a missing required key is ADK's
 * "Context variable not found" -- left as written here and reported in
 * run->instruction_error, which the flow turns into an error event), then
 * ADK's identity instruction (always), then its transfer instruction when
 * the agent can transfer.
 */
char *
adk_build_instruction(AdkRun *run, AdkAgent *agent)
{
	StringInfoData out;
	List	   *targets = adk_transfer_targets(agent);
	Jsonb	   *state = NULL;
	const char *p;
	ListCell   *lc;

	initStringInfo(&out);
	if (agent->instruction && strchr(agent->instruction, '{') != NULL)
	{
		/* the session's state with app: and user: (store/session_read.c) */
		state = adk_session_state(run->app, run->user, run->session);
		if (state && run->temp_state)
			state = adk_jsonb_concat(state, run->temp_state);

		for (p = agent->instruction; *p; p++)
		{
			const char *open_end;
			const char *close;
			const char *end;
			char	   *key;
			bool		optional;
			JsonbValue *v;
			size_t		len;

			/* ADK's pattern: \{+[^{}]*\}+ */
			if (*p != '{')
			{
				appendStringInfoChar(&out, *p);
				continue;
			}
			for (open_end = p; *open_end == '{'; open_end++)
				;
			for (close = open_end; *close && *close != '{' && *close != '}'; close++)
				;
			if (*close != '}')
			{
				/* no match starts here: the braces before "{" stay as they are */
				appendBinaryStringInfo(&out, p, open_end - p);
				p = open_end - 1;
				continue;
			}
			for (end = close; end[1] == '}'; end++)
				;
			/* the key: the braces stripped, then blanks */
			while (open_end < close && isspace((unsigned char) *open_end))
				open_end++;
			len = close - open_end;
			while (len > 0 && isspace((unsigned char) open_end[len - 1]))
				len--;
			key = pnstrdup(open_end, len);
			optional = len > 0 && key[len - 1] == '?';
			if (optional)
				key[len - 1] = '\0';
			if (!is_state_name(key))
			{
				/* not a state key (JSON, an artifact, prose): as written */
				appendBinaryStringInfo(&out, p, end - p + 1);
				p = end;
				continue;
			}
			v = state ? adk_jsonb_get(&state->root, key) : NULL;
			if (v == NULL && !optional)
			{
				/* ADK-JS's and ADK Python's message */
				if (run->instruction_error == NULL)
					run->instruction_error =
						psprintf("Context variable not found: `%s`.", key);
				appendBinaryStringInfo(&out, p, end - p + 1);
				p = end;
				continue;
			}
			if (v != NULL && v->type == jbvString)
				appendBinaryStringInfo(&out, v->val.string.val, v->val.string.len);
			else if (v != NULL && v->type == jbvBinary)
				(void) JsonbToCString(&out, v->val.binary.data, -1);
			else if (v != NULL)
				(void) JsonbToCString(&out, &JsonbValueToJsonb(v)->root, -1);
			p = end;
		}
	}
	else if (agent->instruction)
		appendStringInfoString(&out, agent->instruction);

	/* ADK's identity instruction, for every LLM agent */
	if (out.len > 0)
		appendStringInfoString(&out, "\n\n");
	appendStringInfo(&out, "You are an agent. Your internal name is \"%s\".", agent->name);
	if (agent->description && agent->description[0] != '\0')
		appendStringInfo(&out, " The description about you is \"%s\".", agent->description);
	if (targets != NIL)
	{
		appendStringInfoString(&out, "\n\nYou have a list of other agents to transfer to:\n");
		foreach(lc, targets)
		{
			AdkAgent   *t = (AdkAgent *) lfirst(lc);

			appendStringInfo(&out, "\nAgent name: %s\nAgent description: %s\n",
							 t->name, t->description ? t->description : "");
		}
		appendStringInfoString(&out,
							   "\nIf you are the best to answer the question according to your description, you can answer it.\n\n"
							   "If another agent is better for answering the question according to its description, call `transfer_to_agent` function to transfer the question to that agent. When transferring, do not generate any text other than the function call.\n");
		if (agent->parent && !agent->disallow_transfer_to_parent)
			appendStringInfo(&out,
							 "\nYour parent agent is %s. If neither the other agents nor you are best for answering the question according to the descriptions, transfer to your parent agent.\n",
							 agent->parent->name);
	}
	/* load_artifacts, load_memory, preload_memory (builtin_tools.c) */
	adk_builtin_instruction(run, agent, &out);
	return out.len > 0 ? out.data : NULL;
}

/*
 * The generation config of a request of agent: its system instruction (or
 * none), under the agent's own generate_config.  flow.c's requests and
 * adk_prompt (prompt_sql.c) both build it here.
 */
Jsonb *
adk_request_config(AdkAgent *agent, const char *instruction)
{
	JsonWriter	w;
	Jsonb	   *config;

	jw_init(&w);
	jw_begin_object(&w);
	if (instruction)
	{
		jw_key(&w, "system_instruction");
		jw_string(&w, instruction);
	}
	jw_end_object(&w);
	config = jw_finish(&w);
	if (agent->generate_config)
		config = adk_jsonb_concat(agent->generate_config, config);
	return config;
}
