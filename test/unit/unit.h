/*-------------------------------------------------------------------------
 *
 * unit.h
 *	  Minimal harness for the standalone unit tests of src/model.
 *
 * A test is a void function; CHECK* macros record a failure (with file and
 * line) and let the test go on.  Suites are NULL-terminated UnitTest
 * arrays listed in unit_main.c.
 *
 * IDENTIFICATION
 *	  test/unit/unit.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_UNIT_H
#define ADK_UNIT_H

#include <stddef.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

typedef struct UnitTest
{
	const char *name;
	void		(*fn) (void);
} UnitTest;

extern const UnitTest sse_tests[];
extern const UnitTest common_tests[];
extern const UnitTest openai_tests[];
extern const UnitTest gemini_tests[];
extern const UnitTest anthropic_tests[];
extern const UnitTest output_tests[];
extern const UnitTest addr_tests[];

extern void unit_fail(const char *file, int line, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
extern int	unit_check_json(const char *file, int line,
							struct json_object *got, struct json_object *want);
extern int	unit_check_json_text(const char *file, int line,
								 struct json_object *got, const char *want);

/* JSON from text written with ' for " (for readable literals) */
extern struct json_object *J(const char *squoted);
/* a fixture file under test/unit/data; malloc'd, NUL-terminated */
extern char *unit_read(const char *name, size_t *len);
extern struct json_object *unit_load(const char *name);

/*
 * Request body built from the fixtures history.json, tools.json and
 * config.json with system instruction "You are helpful.", parsed back.
 */
extern struct json_object *unit_build_fixture(LlmProvider p, const char *model,
											  int stream);
/* Request body for contents (' for "), no tools or config; NULL on error */
extern struct json_object *unit_build(LlmProvider p, const char *contents,
									  char **err);

/*
 * Build requests of contents taken from history (' for ") as a tool loop,
 * compaction and reordering would: every prefix, every suffix, the whole
 * reversed.  Each is built once without reuse and once with what earlier
 * requests' contents made (keyed by the content's text, as msg_cache.c
 * keys by its bytes), which must give the same bytes; returns how many
 * contents were reused and checks that each content of history that made
 * something for reuse is one of expect_kept (a string of '1' and '0', a
 * character per content of history).
 */
extern int	unit_check_reuse(const char *file, int line, LlmProvider p,
							 const char *history, const char *expect_kept);
#define CHECK_REUSE(p, history, kept) \
	unit_check_reuse(__FILE__, __LINE__, (p), (history), (kept))

/*
 * Build history (' for ") whole with a log (LlmRequestSpec.log), then
 * resumed at every boundary the log says it may be: with the same
 * contents, and (LLM_RESUME_ANY boundaries) with each content of history
 * in place of the rest -- each must give the bytes the whole build of the
 * same contents gives, and the same log from the boundary on.  Returns how
 * many boundaries were resumable.
 */
extern int	unit_check_resume(const char *file, int line, LlmProvider p,
							  const char *history);
#define CHECK_RESUME(p, history) \
	unit_check_resume(__FILE__, __LINE__, (p), (history))

/*
 * How many contents unit_check_reuse took from what they made with the same
 * ids (LlmRequestSpec.idmsgs), since the start.
 */
extern int	unit_idreuse_hits;

/* The history the adapters' reuse tests build from (14 contents) */
extern const char unit_reuse_history[];

/* Feed body to a new stream in pieces of step bytes (0: all at once) */
typedef struct UnitStreamRun
{
	struct json_object *final;	/* llm_stream_finish result */
	struct json_object *partials;	/* copies of the partials, in order */
	int			feed_failed;	/* some llm_stream_feed returned -1 */
} UnitStreamRun;

extern void unit_stream(LlmProvider p, const char *body, size_t len,
						size_t step, long status, UnitStreamRun *run);
extern void unit_stream_free(UnitStreamRun *run);

/* Replace a generated function-call id by "GEN" after checking its form */
extern int	unit_strip_ids(const char *file, int line, struct json_object *resp);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			unit_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
	} while (0)

#define CHECK_INT(got, want) \
	do { \
		long long	g_ = (long long) (got); \
		long long	w_ = (long long) (want); \
		if (g_ != w_) \
			unit_fail(__FILE__, __LINE__, "%s == %lld, expected %lld", #got, g_, w_); \
	} while (0)

#define CHECK_STR(got, want) \
	do { \
		const char *g_ = (got); \
		const char *w_ = (want); \
		if (g_ == NULL || w_ == NULL ? g_ != w_ : strcmp(g_, w_) != 0) \
			unit_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #got, \
					  g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
	} while (0)

#define CHECK_JSON(got, want_text) \
	unit_check_json_text(__FILE__, __LINE__, (got), (want_text))
#define CHECK_JSON_OBJ(got, want) \
	unit_check_json(__FILE__, __LINE__, (got), (want))
#define STRIP_IDS(resp) unit_strip_ids(__FILE__, __LINE__, (resp))

#endif							/* ADK_UNIT_H */
