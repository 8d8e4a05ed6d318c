
/*
 * Standalone check of src/store/ngx_http_tent_store_stats.c: whether LevelDB
 * would compact now, read from its "leveldb.stats" (the owner flushes its
 * memtable after background work only when not: docs/store.md).  The
 * strings are LevelDB 1.23's format (db_impl.cc, "%3d %8d %8.0f %9.0f
 * %8.0f %9.0f"), the first as a real store printed it.  t/unit/run.sh
 * builds and runs it; `make test` runs that.
 */


#include "../../src/store/ngx_http_tent_store_stats.c"

#include <stdio.h>


static int  failures;
static int  checks;


#define HEAD                                                                 \
    "                               Compactions\n"                           \
    "Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n"                   \
    "--------------------------------------------------\n"


static void
check(int line, const char *stats, ngx_uint_t want)
{
    ngx_uint_t  got;

    checks++;
    got = ngx_http_tent_ldb_stats_due(stats);

    if (got != want) {
        failures++;
        fprintf(stderr, "store_stats_test.c:%d: due %lu, want %lu\n",
                line, (unsigned long) got, (unsigned long) want);
    }
}


int
main(void)
{
    /* nothing due */
    check(__LINE__, HEAD, 0);
    check(__LINE__, HEAD
          "  2        1        0         0        0         0\n", 0);
    check(__LINE__, HEAD
          "  0        3        7         0        0         7\n"
          "  1        5        9         1       20        18\n"
          "  2       40       99         3       60        59\n", 0);

    /* level 0 at 4 files: LevelDB compacts it (or does now) */
    check(__LINE__, HEAD
          "  0        4        9         0        0         9\n", 1);
    check(__LINE__, HEAD
          "  0       12       30         0        0        30\n"
          "  1        2        4         0        0         0\n", 1);

    /* level 1 at 10 MB, level 2 at 100, level 3 at 1,000 */
    check(__LINE__, HEAD
          "  1        6       10         1       20        18\n", 1);
    check(__LINE__, HEAD
          "  1        3        4         1       20        18\n"
          "  2       60      100         3       60        59\n", 1);
    check(__LINE__, HEAD
          "  3      400      999         3       60        59\n", 0);
    check(__LINE__, HEAD
          "  3      500     1000         3       60        59\n", 1);

    /* what it cannot read is due: no flush */
    check(__LINE__, "", 1);
    check(__LINE__, "no such property", 1);
    check(__LINE__, HEAD "  x        y\n", 1);
    check(__LINE__, HEAD "  9        1        0         0        0         0\n", 1);
    check(__LINE__, "Level  Files Size(MB)\n  0 1 0 0 0 0\n", 1);

    printf("store_stats_test: %d checks, %d failures\n", checks, failures);

    return failures ? 1 : 0;
}
