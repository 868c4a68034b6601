/*-------------------------------------------------------------------------
 *
 * otlp.c
 *	  The "adk_runner otlp exporter" background worker: sends the committed
 *	  spans of adk.database to adk.otlp_endpoint as OTLP/HTTP JSON
 *	  (POST {endpoint}/v1/traces), in batches of adk.otlp_batch_size.
 *
 * Each span is delivered once.  The runner queues a span (adk.span_exports)
 * in the span's own transaction, so the queue holds exactly the committed
 * spans not yet delivered -- whatever order their transactions commit in,
 * which a cursor on adk.spans.id could not promise.  A round: one short
 * transaction reads the first batch in queue order and builds the payload
 * (adk._otlp_batch); the POST is made outside any transaction; only after a
 * 2xx does a second transaction delete those queue rows.  A failure (no
 * answer, or not 2xx) leaves them queued: the batch is sent again after a
 * backoff of 1 s doubling to 60 s.  The queue is a table, so it survives
 * restarts and crashes; the one window for a repeat is a crash between the
 * 2xx and that commit (then the receiver sees the batch twice -- the same
 * trace and span ids).
 *
 * Credentials: adk.otlp_secret names a row of adk.secrets whose value is
 * sent as the adk.otlp_header header, and only to one of the secret's
 * allowed_hosts (read and compared as a model's key is, model/endpoint.c),
 * like a model's key: an endpoint on another host gets no
 * export at all (the error says why) rather than the key or an
 * unauthenticated request.  The value never appears in a log or in
 * adk.otlp_export_state.
 *
 * IDENTIFICATION
 *	  src/worker/otlp.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "common/owner.h"
#include "common/schema_version.h"
#include "model/endpoint.h"
#include "model/http.h"
#include "runner/spans.h"
#include "worker/otlp.h"
#include "worker/worker.h"

#define BACKOFF_MIN_MS	1000
#define BACKOFF_MAX_MS	60000

static char *otlp_secret = NULL;
static char *otlp_header = NULL;
static char *otlp_service_name = NULL;
static int	otlp_batch_size = 256;
static int	otlp_interval_ms = 5000;
static int	otlp_timeout_ms = 10000;

static void register_exporter(void);
static bool endpoint_check(char **newval, void **extra, GucSource source);
static int	export_round(bool *failed);
static char *traces_url(const char *endpoint);
static void record_result(int n, const char *error);

/*
 * From adk_worker_init: the settings; the worker only while preloading.
 */
void
adk_otlp_init(void)
{
	DefineCustomStringVariable("adk.otlp_endpoint",
							   gettext_noop("OTLP/HTTP endpoint the exporter sends committed spans to, e.g. http://collector:4318."),
							   gettext_noop("Spans go to {endpoint}/v1/traces as JSON.  Empty: no export (and no queue)."),
							   &adk_otlp_endpoint,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   endpoint_check, NULL, NULL);
	DefineCustomStringVariable("adk.otlp_secret",
							   gettext_noop("Name of the adk.secrets row whose value the exporter sends in adk.otlp_header."),
							   gettext_noop("Sent only to the secret's allowed_hosts."),
							   &otlp_secret,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("adk.otlp_header",
							   gettext_noop("Header that carries adk.otlp_secret's value."),
							   NULL,
							   &otlp_header,
							   "Authorization",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("adk.otlp_service_name",
							   gettext_noop("service.name of the exported spans' resource."),
							   NULL,
							   &otlp_service_name,
							   "adk_runner",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("adk.otlp_batch_size",
							gettext_noop("Largest number of spans in one export request."),
							NULL,
							&otlp_batch_size,
							256,
							1,
							100000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("adk.otlp_interval",
							gettext_noop("How long the exporter waits between rounds when nothing is left to send."),
							NULL,
							&otlp_interval_ms,
							5000,
							10,
							3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("adk.otlp_timeout",
							gettext_noop("How long one export request may take."),
							NULL,
							&otlp_timeout_ms,
							10000,
							100,
							600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	if (process_shared_preload_libraries_in_progress)
		register_exporter();
}

static bool
endpoint_check(char **newval, void **extra, GucSource source)
{
	const char *s = *newval;
	AdkEndpoint ep;
	const char *problem;

	if (s == NULL || *s == '\0')
		return true;
	if ((pg_strncasecmp(s, "http://", 7) != 0 && pg_strncasecmp(s, "https://", 8) != 0) ||
		strpbrk(s, " \t\r\n@?#") != NULL)
	{
		GUC_check_errdetail("Give the collector's base URL, e.g. http://127.0.0.1:4318, without credentials, query or fragment.");
		return false;
	}
	/* as libcurl will read it, and as the secret's binding is checked */
	problem = adk_endpoint_parse(s, &ep);
	if (problem != NULL)
	{
		GUC_check_errdetail("The URL is not valid: %s.", problem);
		return false;
	}
	return true;
}

static void
register_exporter(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 10;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "adk_runner");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "adk_otlp_exporter_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "adk_runner otlp exporter");
	snprintf(worker.bgw_type, BGW_MAXLEN, "adk_runner otlp exporter");
	RegisterBackgroundWorker(&worker);
}

void
adk_otlp_exporter_main(Datum arg)
{
	MemoryContext round_cxt;
	int			backoff_ms = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(adk_database, NULL, 0);
	pgstat_report_appname("adk_runner otlp exporter");
	/* every name below is qualified; nothing is looked up by search_path */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	round_cxt = AllocSetContextCreate(TopMemoryContext, "adk_runner otlp round",
									  ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		long		timeout = otlp_interval_ms;
		bool		failed = false;
		int			n;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		MemoryContextReset(round_cxt);
		MemoryContextSwitchTo(round_cxt);
		if (adk_otlp_endpoint && adk_otlp_endpoint[0])
		{
			n = export_round(&failed);
			if (failed)
			{
				backoff_ms = backoff_ms == 0 ? BACKOFF_MIN_MS :
					Min(backoff_ms * 2, BACKOFF_MAX_MS);
				timeout = backoff_ms;
			}
			else
			{
				backoff_ms = 0;
				if (n >= otlp_batch_size)
					timeout = 0;	/* more is waiting */
			}
		}
		pgstat_report_stat(false);
		pgstat_report_activity(STATE_IDLE, NULL);
		if (timeout > 0)
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 timeout, PG_WAIT_EXTENSION);
	}
}

/* sql/install/88_store_statements.sql */
#define SECRET_SQL "SELECT * FROM adk._otlp_secret($1)"

/*
 * One batch: read, send, and on a 2xx dequeue.  The number of spans
 * sent; *failed when they were not accepted (or could not be sent).
 */
static int
export_round(bool *failed)
{
	MemoryContext round_cxt = CurrentMemoryContext;
	char	   *url = traces_url(adk_otlp_endpoint);
	AdkEndpoint ep;
	const char *problem = adk_endpoint_parse(url, &ep);
	char	   *payload = NULL;
	char	   *auth = NULL;
	char	   *error = NULL;
	Datum		refs = (Datum) 0;
	int			n = 0;
	AdkHttpRequest req;
	AdkHttpResponse resp;
	const char *headers[3];

	*failed = false;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "adk_runner otlp exporter: reading spans");
	/*
	 * Only against the schema of the library's own version: between a
	 * package upgrade and ALTER EXTENSION UPDATE the spans stay queued, as
	 * queued runs wait (docs/observability.md).
	 */
	if (adk_schema_state(NULL) == ADK_SCHEMA_MATCHES &&
		OidIsValid(get_relname_relid("span_exports", get_namespace_oid("adk", true))))
	{
		Oid			types[1] = {TEXTOID};
		Datum		args[2];
		bool		isnull;
		bool		bound = false;

		SPI_connect();
		args[0] = Int32GetDatum(otlp_batch_size);
		args[1] = CStringGetTextDatum(otlp_service_name ? otlp_service_name : "adk_runner");
		{
			Oid			btypes[2] = {INT4OID, TEXTOID};

			if (SPI_execute_with_args("SELECT b.refs, b.payload FROM adk._otlp_batch($1, $2) b",
									  2, btypes, args, NULL, false, 1) != SPI_OK_SELECT ||
				SPI_processed != 1)
				elog(ERROR, "could not read the spans to export");
		}
		refs = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(round_cxt);
			ArrayType  *a = DatumGetArrayTypePCopy(refs);

			refs = PointerGetDatum(a);
			n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
			payload = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 2, &isnull));
			MemoryContextSwitchTo(old);
		}
		if (n > 0 && otlp_secret && otlp_secret[0])
		{
			args[0] = CStringGetTextDatum(otlp_secret);
			if (SPI_execute_with_args(SECRET_SQL, 1, types, args, NULL, true, 1) != SPI_OK_SELECT)
				elog(ERROR, "could not read the exporter's secret");
			if (SPI_processed == 1 && problem == NULL)
			{
				Datum		hosts = SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 2, &isnull);

				bound = adk_endpoint_allowed_by(DatumGetArrayTypeP(hosts), &ep);
			}
			if (bound)
			{
				Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
				MemoryContext old = MemoryContextSwitchTo(round_cxt);

				auth = psprintf("%s: %s", otlp_header, TextDatumGetCString(d));
				MemoryContextSwitchTo(old);
			}
			else
			{
				MemoryContext old = MemoryContextSwitchTo(round_cxt);

				if (problem != NULL)
					error = psprintf("endpoint \"%s\" is not a valid URL: %s",
									 url, problem);
				else
					error = psprintf("secret \"%s\" does not exist or may not be sent to \"%s\"",
									 otlp_secret, adk_endpoint_hostport(&ep));
				MemoryContextSwitchTo(old);
			}
		}
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(round_cxt);

	if (n == 0)
		return 0;
	if (error == NULL)
	{
		int			nh = 0;

		pgstat_report_activity(STATE_RUNNING, "adk_runner otlp exporter: sending spans");
		headers[nh++] = "Content-Type: application/json";
		if (auth)
			headers[nh++] = auth;
		memset(&req, 0, sizeof(req));
		req.url = url;
		req.headers = headers;
		req.nheaders = nh;
		req.body = payload;
		req.body_len = strlen(payload);
		req.timeout_ms = otlp_timeout_ms;
		req.connect_timeout_ms = Min(otlp_timeout_ms, 5000);
		req.retries = 0;		/* the round's backoff retries */
		req.max_bytes = 1024 * 1024;
		adk_http_post(&req, &resp);
		if (resp.error_code != NULL)
			error = psprintf("%s: %s", resp.error_code,
							 resp.error_message ? resp.error_message : "");
		else if (resp.status < 200 || resp.status > 299)
			error = psprintf("HTTP status %ld", resp.status);
	}

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	if (error == NULL)
	{
		Oid			type = INT8ARRAYOID;

		if (SPI_execute_with_args("SELECT adk._span_exports_dequeue($1)",
								  1, &type, &refs, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not dequeue the exported spans");
	}
	SPI_finish();
	record_result(error ? 0 : n, error);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(round_cxt);

	if (error)
	{
		ereport(LOG,
				(errmsg("adk_runner otlp exporter could not deliver %d spans to \"%s\": %s",
						n, url, error),
				 errdetail("They stay queued and are sent again.")));
		*failed = true;
	}
	return n;
}

static void
record_result(int n, const char *error)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};

	args[0] = Int64GetDatum(n);
	args[1] = error ? CStringGetTextDatum(error) : (Datum) 0;
	nulls[1] = error ? ' ' : 'n';
	SPI_connect();
	if (SPI_execute_with_args("SELECT adk._otlp_record_export($1, $2)",
							  2, types, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the export");
	SPI_finish();
}

/*
 * {endpoint}/v1/traces, unless the endpoint names that path already.
 */
static char *
traces_url(const char *endpoint)
{
	size_t		len = strlen(endpoint);

	while (len > 0 && endpoint[len - 1] == '/')
		len--;
	if (len >= 10 && strncmp(endpoint + len - 10, "/v1/traces", 10) == 0)
		return pnstrdup(endpoint, len);
	return psprintf("%.*s/v1/traces", (int) len, endpoint);
}

