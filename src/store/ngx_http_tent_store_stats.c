
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * LevelDB's "leveldb.stats", read for one question: would it compact
 * now?  The owner does not flush its memtable then (store_memory.c): the
 * flush would wait for that compaction, which a close would cut short.
 * A string in, no LevelDB call, so that t/unit checks it on its own.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"


/* LevelDB 1.23's marks (version_set.cc, dbformat.h) */
#define NGX_HTTP_TENT_L0_TRIGGER   4
#define NGX_HTTP_TENT_L1_MB        10.0


/*
 * Its rule: level 0 at 4 files, level 1 at 10 MB, each level after at
 * 10 times the one before; a compaction under way keeps its level over
 * the mark until it ends.  The table's rows are "level files size(MB)
 * ..." (sizes in whole MB, rounded: a level a little under its mark may
 * look due; the owner stops asking after a while).  With 3 files at
 * level 0 the flush makes the fourth, and waits for that one compaction
 * of level 0 into level 1 (at most 4 tables and 10 MB).  Anything it
 * cannot read is due: no flush.
 */

/*
 * (A compaction LevelDB starts for a table read too often is not in
 * these figures: a flush may still wait for one of those, a table's.)
 */

ngx_uint_t
ngx_http_tent_ldb_stats_due(const char *stats)
{
    int          level, files;
    double       mb, mark;
    const char  *p;

    /* the rows come after the header's line of dashes */

    p = ngx_strstr(stats, "Level  Files Size(MB)");
    if (p == NULL || (p = ngx_strstr(p, "---")) == NULL) {
        return 1;
    }

    for (p = strchr(p, '\n'); p && p[1] != '\0'; p = strchr(p + 1, '\n')) {
        if (sscanf(p + 1, "%d %d %lf", &level, &files, &mb) != 3
            || level < 0 || level > 6 || files < 0 || mb < 0)
        {
            /* another format: a LevelDB we do not know */
            return 1;
        }

        if (level == 0) {
            if (files >= NGX_HTTP_TENT_L0_TRIGGER) {
                return 1;
            }

            continue;
        }

        for (mark = NGX_HTTP_TENT_L1_MB; level > 1; level--) {
            mark *= 10.0;
        }

        if (mb >= mark) {
            return 1;
        }
    }

    return 0;
}
