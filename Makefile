# adk_runner — PGXS build
#
#   make && make install        build and install into the pg_config found first
#   make installcheck           all suites against a throw-away temp instance
#                               (run as a non-root user; see test/ci.sh)
EXTENSION    = adk_runner
EXTVERSION   = 0.9.0
MODULE_big   = adk_runner

OBJS = \
	src/adk_runner.o \
	src/common/ids.o \
	src/common/jsonb_build.o \
	src/common/json_bridge.o \
	src/common/json_limits.o \
	src/common/json_writer.o \
	src/common/jsonb_util.o \
	src/common/owner.o \
	src/common/schema_version.o \
	src/common/spi_plans.o \
	src/common/subxact_abort.o \
	src/common/trace_context.o \
	src/model/adapter_anthropic.o \
	src/model/adapter_gemini.o \
	src/model/adapter_openai.o \
	src/model/addr.o \
	src/model/buf.o \
	src/model/embed.o \
	src/model/endpoint.o \
	src/model/generate.o \
	src/model/generate_sql.o \
	src/model/guard.o \
	src/model/http.o \
	src/model/ledger.o \
	src/model/llm.o \
	src/model/llm_content.o \
	src/model/llm_ids.o \
	src/model/llm_json.o \
	src/model/llm_response.o \
	src/model/llm_stream.o \
	src/model/llm_thinking.o \
	src/model/model_def.o \
	src/model/prompt_cache.o \
	src/model/msg_cache.o \
	src/model/fallback.o \
	src/model/settings.o \
	src/model/request_jsonb.o \
	src/model/request_memo.o \
	src/model/sse.o \
	src/runner/agents.o \
	src/runner/args.o \
	src/runner/artifact_tools.o \
	src/runner/budget.o \
	src/runner/builtin_tools.o \
	src/runner/compaction.o \
	src/runner/compaction_sql.o \
	src/runner/defs.o \
	src/runner/emit.o \
	src/runner/flow.o \
	src/runner/hist_event.o \
	src/runner/hitl.o \
	src/runner/input.o \
	src/runner/memory_tools.o \
	src/runner/output_schema.o \
	src/runner/parts.o \
	src/runner/plugins.o \
	src/runner/prompt.o \
	src/runner/prompt_carry.o \
	src/runner/prompt_instruction.o \
	src/runner/prompt_memo.o \
	src/runner/prompt_sql.o \
	src/runner/retry.o \
	src/runner/route.o \
	src/runner/run.o \
	src/runner/run_states.o \
	src/runner/run_entry.o \
	src/runner/schema_check.o \
	src/runner/settings.o \
	src/runner/single_turn.o \
	src/runner/spans.o \
	src/runner/subxact.o \
	src/runner/task_mode.o \
	src/runner/thoughts.o \
	src/runner/tools.o \
	src/runner/workflow.o \
	src/runner/workflow_node.o \
	src/shared/breaker.o \
	src/shared/registry.o \
	src/shared/shmem.o \
	src/shared/spent.o \
	src/store/event.o \
	src/store/event_trigger.o \
	src/store/notify.o \
	src/store/rewound_trigger.o \
	src/store/session_read.o \
	src/store/session_trigger.o \
	src/store/settings.o \
	src/store/append.o \
	src/store/artifacts.o \
	src/store/lifecycle.o \
	src/store/tenancy.o \
	src/worker/cancel.o \
	src/worker/job.o \
	src/worker/launcher.o \
	src/worker/otlp.o \
	src/worker/shmem.o \
	src/worker/spent_writer.o \
	src/worker/submit.o \
	src/worker/trigger.o

# The install script is assembled from pieces under sql/install/, grouped by
# concern and concatenated in file-name order.
INSTALL_PIECES = $(sort $(wildcard sql/install/*.sql))
DATA_built   = $(EXTENSION)--$(EXTVERSION).sql
# Released versions: each release's full install script, frozen, and the
# upgrade script from every release to the next (docs/releasing.md).
DATA         = $(sort $(wildcard sql/releases/$(EXTENSION)--*.sql))

PG_CPPFLAGS  = -I$(srcdir)/src $(shell pkg-config --cflags json-c libcurl) -DADK_LIB_VERSION='"$(EXTVERSION)"'
SHLIB_LINK   = $(shell pkg-config --libs json-c libcurl)
PG_CFLAGS    = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror
# Header dependencies: gcc writes src/<dir>/<file>.d beside each object
# (Debian's PGXS is built without autodepend), so changing a header
# rebuilds what includes it; a stale object with an old struct layout
# otherwise links and misbehaves.  In CFLAGS, not CPPFLAGS: the bitcode
# compile must not overwrite the .d with its own target.
PG_CFLAGS   += -MMD -MP

# Regression tests: every sql/NNN_*.sql file, in number order (three
# digits, each number once: test/README.md).
REGRESS      = $(sort $(patsubst sql/%.sql,%,$(wildcard sql/[0-9][0-9][0-9]_*.sql)))
REGRESS_OPTS = --temp-instance=$(CURDIR)/tmp_regress --temp-config=$(srcdir)/test/temp.conf

ISOLATION      = $(sort $(patsubst test/specs/%.spec,%,$(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --temp-instance=$(CURDIR)/tmp_check_iso --temp-config=$(srcdir)/test/temp.conf \
	--inputdir=$(srcdir)/test --load-extension=$(EXTENSION)

TAP_TESTS    = 1
PROVE_TESTS  = $(wildcard test/t/*.pl)

EXTRA_CLEAN  = tmp_regress tmp_check_iso output_iso results regression.diffs regression.out log \
	tmp_regress_vg output_vg $(OBJS:.o=.d)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# the library's version is compiled in: a new EXTVERSION rebuilds it
src/common/schema_version.o: Makefile

-include $(OBJS:.o=.d)

$(EXTENSION)--$(EXTVERSION).sql: $(INSTALL_PIECES)
	cat $^ > $@
