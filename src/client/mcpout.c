/* mcpout.c — the outputSchema of each tool of `gflow mcp serve` (see mcp.h):
 * JSON Schemas (2020-12, the MCP default dialect) of what each tool returns
 * as structuredContent. They name what a client may rely on and leave room
 * for more (no additionalProperties: false): a field added later breaks no
 * client. tests/e2e/test_mcp.py validates every tool's results against them.
 *
 * Written with ' for " to stay readable; mcp_output_schema hands out the
 * JSON text. */
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "util.h"

#define S(x) "{'type':'" x "'}"
#define OR_NULL(x) "{'type':['" x "','null']}"
#define INT S("integer")
#define NUM S("number")
#define STR S("string")
#define BOOL S("boolean")
#define STRS "{'type':'array','items':" STR "}"
#define IDS "{'type':'array','items':" INT "}"
#define STATE "{'enum':['Queued','Hold','Running','Finished','Failed','Cancelled','Timeout']}"
/* A job as the daemon shows it: these fields at least (a waiting one's
 * expected start: null with a note when it is not known). */
#define JOB "{'type':'object','required':['id','state'],'properties':{'id':{'type':'integer','minimum':1}," \
	"'state':" STATE ",'name':" OR_NULL("string") ",'user':" OR_NULL("string") ",'reason':" OR_NULL("string") \
	",'gpus':" INT ",'expected_start':" OR_NULL("number") ",'expected_gpus':" IDS ",'expected_start_note':" STR "}}"
#define COUNTS "{'type':'object','additionalProperties':" INT "}"
#define ERRORS "{'type':'array','items':{'type':'object','required':['error'],'properties':{'id':" INT \
	",'error':" STR "}}}"
#define DONE "{'type':'object','required':['done'],'properties':{'done':" IDS ",'errors':" ERRORS "}}"
#define OBJ(req, props) "{'type':'object','required':[" req "],'properties':{" props "}}"
#define LIMIT OR_NULL("number")
#define SUBJECT OBJ("'kind','name','limits','left','running_jobs','running_gpus','queued_jobs','gpu_hours_24h'", \
	"'kind':{'enum':['user','project']},'name':" STR ",'limits':" \
	OBJ("'max_running_jobs','max_running_gpus','max_queued_jobs','max_gpu_hours_per_day'", \
	    "'max_running_jobs':" LIMIT ",'max_running_gpus':" LIMIT ",'max_queued_jobs':" LIMIT \
	    ",'max_gpu_hours_per_day':" LIMIT) \
	",'left':" OBJ("'max_running_jobs','max_running_gpus','max_queued_jobs','max_gpu_hours_per_day'", \
	    "'max_running_jobs':" LIMIT ",'max_running_gpus':" LIMIT ",'max_queued_jobs':" LIMIT \
	    ",'max_gpu_hours_per_day':" LIMIT) \
	",'override':" OR_NULL("object") ",'running_jobs':" INT ",'running_gpus':" INT ",'queued_jobs':" INT \
	",'gpu_hours_24h':" NUM ",'usage_gpu_secs':" NUM)

static const struct {
	const char *tool, *schema;
} outs[] = {
	{ "get_health", OBJ("'status','version','pid'", "'status':" STR ",'version':" STR ",'pid':" INT
	  ",'mode':{'enum':['personal','system']},'socket':" STR ",'executor':" STR ",'jobs':" INT
	  ",'uptime_secs':" NUM) },
	{ "get_info", OBJ("'version','pid','executor','mode','gpus'", "'version':" STR ",'pid':" INT
	  ",'executor':" STR ",'mode':{'enum':['personal','system']},'strategy':" STR ",'gpus':" S("object")
	  ",'jobs':" INT ",'caller':" OR_NULL("object")) },
	{ "list_jobs", OBJ("'total','shown','jobs'", "'total':" INT ",'shown':" INT ",'jobs':{'type':'array',"
	  "'items':" JOB "}") },
	{ "get_job", OBJ("'job'", "'job':" JOB) },
	{ "get_job_log", "{'type':'object','required':['id','state','next_offset'],'properties':{'id':" INT
	  ",'state':" STATE ",'next_offset':{'type':'integer','minimum':0},'log_path':" OR_NULL("string")
	  ",'lines':" STRS ",'offset':" INT ",'bytes':" INT ",'more':" BOOL ",'text':" STR "},"
	  "'anyOf':[{'required':['lines']},{'required':['offset','bytes','more','text']}]}" },
	{ "get_stats", OBJ("'scope','jobs','by_state','success_rate','avg_wait_secs','avg_run_secs','gpu_hours',"
	  "'gpus_in_use'", "'scope':" STR ",'jobs':" INT ",'by_state':" COUNTS ",'success_rate':" OR_NULL("number")
	  ",'avg_wait_secs':" OR_NULL("number") ",'avg_run_secs':" OR_NULL("number") ",'gpu_hours':" NUM
	  ",'gpus_in_use':" INT ",'success_rate_means':" STR) },
	{ "list_reservations", OBJ("'reservations'", "'reservations':{'type':'array','items':" S("object")
	  "},'gpus':" INT ",'now':" NUM) },
	{ "get_queue_pressure", OBJ("'queued','held','running','queued_gpus_requested','gpus','queued_by_reason',"
	  "'oldest_queued','by_user','summary'", "'queued':" INT ",'held':" INT ",'running':" INT
	  ",'queued_gpus_requested':" INT ",'gpus':" OBJ("'total','idle','busy_or_unavailable'", "'total':" INT
	  ",'idle':" INT ",'busy_or_unavailable':" INT) ",'queued_by_reason':" COUNTS ",'oldest_queued':{'type':"
	  "['object','null'],'required':['id','waiting_secs'],'properties':{'id':" INT ",'waiting_secs':" NUM "}}"
	  ",'by_user':{'type':'object','additionalProperties':" OBJ("'queued','running','gpus_running'", "'queued':"
	  INT ",'running':" INT ",'gpus_running':" INT) "},'summary':" STR) },
	{ "triage_job", OBJ("'job','diagnosis','evidence','hints','log_tail'", "'job':" OBJ("'id','state',"
	  "'runtime_secs'", "'id':" INT ",'state':" STATE ",'name':" OR_NULL("string") ",'user':" OR_NULL("string")
	  ",'reason':" OR_NULL("string") ",'exit_code':" OR_NULL("integer") ",'exit_signal':" OR_NULL("integer")
	  ",'time_limit_secs':" OR_NULL("integer") ",'runtime_secs':" OR_NULL("number") ",'limit_used_pct':" NUM)
	  ",'diagnosis':" STRS ",'evidence':" STRS ",'hints':" STRS ",'log_path':" OR_NULL("string") ",'log_tail':"
	  STRS ",'log_error':" STR) },
	{ "preview_submit_jobs", OBJ("'jobs','note'", "'jobs':{'type':'array','items':" S("object") "},'note':" STR
	  ",'warnings':" STRS) },
	{ "submit_jobs", OBJ("'jobs'", "'jobs':{'type':'array','items':" OBJ("'id'", "'id':" INT ",'name':"
	  OR_NULL("string")) "},'warnings':" STRS) },
	{ "preview_update_job", OBJ("'job_id','state','changes','valid'", "'job_id':" INT ",'state':" STATE
	  ",'changes':{'type':'array','items':{'type':'object','required':['field','from','to']}},'valid':" BOOL
	  ",'would_be':" S("object") ",'note':" STR ",'error':" STR) },
	{ "update_job", DONE },
	{ "redo_job", OBJ("'jobs'", "'jobs':{'type':'array','items':" OBJ("'id','redo_of'", "'id':" INT
	  ",'name':" OR_NULL("string") ",'redo_of':" INT) "}") },
	{ "cancel_job", OBJ("'cancelled'", "'cancelled':" IDS ",'dependents':" IDS ",'errors':" ERRORS) },
	{ "hold_job", DONE },
	{ "release_job", DONE },
	{ "wait_for_job", OBJ("'ended','timed_out','waited_secs','job'", "'ended':" BOOL ",'timed_out':" BOOL
	  ",'waited_secs':" NUM ",'job':" JOB) },
	{ "get_quotas", OBJ("'user','projects','fair_share'", "'user':" SUBJECT ",'projects':{'type':'array',"
	  "'items':" SUBJECT "},'fair_share':" OBJ("'enabled','half_life_secs'", "'enabled':" BOOL
	  ",'half_life_secs':" INT) ",'note':" STR) },
};

const char *mcp_output_schema(const char *tool)
{
	static char *json[sizeof outs / sizeof outs[0]];

	for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
		if (strcmp(outs[i].tool, tool))
			continue;
		if (!json[i]) {
			json[i] = xstrdup(outs[i].schema);
			for (char *p = json[i]; (p = strchr(p, '\'')); p++)
				*p = '"';
		}
		return json[i];
	}
	return NULL;
}
