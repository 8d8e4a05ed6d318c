
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The priority of the store owner's pool threads (docs/store.md, "The
 * pool's threads below the event loop"): with tent_store_thread_nice N,
 * each thread that runs a store operation raises its own nice value by
 * N, once, the first time.  When the cores are busy, the worker's event
 * loop (the requests, the engine's sends) then goes before LevelDB's
 * work on those threads.  Raising a nice value needs no privilege;
 * lowering it again does (the workers run as an unprivileged user), so
 * a thread stays at its value until the worker exits.  Linux only: a
 * thread's nice value is its own there (setpriority() by thread id).
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"

#if (NGX_LINUX)
#include <sys/resource.h>
#include <sys/syscall.h>
#endif


void
ngx_http_tent_owner_thread_nice(ngx_http_tent_store_t *store, ngx_log_t *log)
{
#if (NGX_LINUX)
    int                  nice;
    pid_t                tid;
    static __thread int  done;

    if (done || store->thread_nice == 0) {
        return;
    }

    done = 1;
    tid = (pid_t) syscall(SYS_gettid);

    errno = 0;
    nice = getpriority(PRIO_PROCESS, (id_t) tid);

    if (nice == -1 && errno != 0) {
        ngx_log_error(NGX_LOG_WARN, log, ngx_errno,
                      "tent store: getpriority() of thread %P failed", tid);
        return;
    }

    nice = ngx_min(nice + (int) store->thread_nice, 19);

    if (setpriority(PRIO_PROCESS, (id_t) tid, nice) == -1) {
        ngx_log_error(NGX_LOG_WARN, log, ngx_errno,
                      "tent store: setpriority(%d) of thread %P failed",
                      nice, tid);
        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "tent store: pool thread %P at nice %d", tid, nice);
#endif
}
