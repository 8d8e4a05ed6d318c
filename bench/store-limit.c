/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * bench/store-limit.c: the physical limit of same-node delivery (issue
 * #13) on this machine: LevelDB alone, with the module's options, doing
 * the store work each same-node delivery needs and nothing else (no
 * nginx, no JSON parsing, no threads, no socket), in batches as the
 * module's (docs/federation.md, "Batches"): for each batch the fan-out's
 * write of its jobs (a job row and a pending status record each, not
 * synced), one read of every job's credential row and copy key (the
 * MGET), then one synced write of every copy (the post, its version,
 * three feed index rows), the job's removal and its status record (the
 * settlement).
 *
 * The rows are the module's, in its key layout (docs/store.md) and at
 * its sizes, as a same-node bench run stores them (t/helpers/ldb-dump.c
 * of a KEEP=1 bench/fanout.sh store): the post's JSON (about 400 bytes,
 * its id, times and text varying by post and delivery), its version
 * row, three index rows of 65 bytes, the status record (156), the end
 * index row (empty), a job row of about 300 bytes.  Values of one
 * repeated byte would be compressed to nothing by snappy, and the
 * compactions would cost nothing: these cost what the module's do.
 *
 *   cc -O2 -o store-limit bench/store-limit.c -lleveldb
 *   ./store-limit DIR [DELIVERIES [BATCH [POST_BYTES]]]
 *
 * DIR must not exist (it is made, then removed by the caller).  The
 * LevelDB options default to the module's, and can be set for a scan by
 * the environment (sizes in bytes, or with k or m):
 *
 *   LDB_WRITE_BUFFER  write_buffer_size (16m: tent_store_write_buffer)
 *   LDB_MAX_FILE      max_file_size (2m)
 *   LDB_COMPRESSION   snappy or none (snappy)
 *   LDB_BLOCK_SIZE    block_size (4k)
 *   LDB_CACHE         the block cache's size (8m: LevelDB's own default)
 *
 * Prints "store-limit: D deliveries in S s, R deliveries/s (batch B,
 * post P bytes; ...options...; cpu C s, W bytes written a delivery; with
 * the compactions after, ...)": the CPU is the process's (all its
 * threads: LevelDB's compaction thread too) until the last write
 * returned, the bytes those it wrote meanwhile (/proc/self/io wchar: the
 * log and the tables); then the same once the compactions the writes
 * left due have ended (the process's CPU still for 0.1 s).
 * Defaults: 20000 deliveries, batches of 256, posts of 401 bytes.
 * Deliveries go to 1,000 recipients, each post to all of them in turn.
 *
 * Then, in the same run, what tent_same_node_rows index does today for
 * a fan-out's same-node follower with no job (docs/federation.md), each
 * into a database of its own (DIR-index1, DIR-index0, removed after):
 * steps of 100 followers, each step three gets a follower (credential,
 * "l" row, block) and one unsynced write of its "l" row, three feed
 * rows, its status record and end index row (6 rows); then the same
 * without the two status rows (4):
 * "store-limit: index: D deliveries in S s, R deliveries/s (6.0 rows
 * each, ...; cpu C s, U us a delivery, W bytes written a delivery)" and
 * "store-limit: index without status: ...".
 *
 * Then the floor issue #28 measures same-node delivery
 * against: LevelDB writing one 64-byte row per recipient and nothing
 * else (no job, no copy, no read), in batches of BATCH, each batch a
 * synced write, into a database of its own (DIR-rows, removed after).
 * That is what a delivery that writes only the recipient's index row
 * could cost at best.  Its line follows the first:
 * "store-limit: baseline: D rows of 64 bytes in S s, R rows/s (batch B,
 * each a synced write; cpu C s, W bytes written a row)".
 */


#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include <leveldb/c.h>


#define RECIPIENTS  1000
#define AUTHOR      "http://127.0.0.1:22700"
#define T0          1796436805ULL      /* a time, s */


static uint64_t  seed = 88172645463325252ULL;


static double
now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static uint64_t
rnd(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;

    return seed;
}


/* a post id: 22 characters of base64url, as the module makes them */

static void
post_id(char *id)
{
    static const char  b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "abcdefghijklmnopqrstuvwxyz0123456789-_";
    int                i;

    for (i = 0; i < 22; i++) {
        id[i] = b64[rnd() & 63];
    }

    id[22] = '\0';
}


/* a follower id: µs time and random, 32 hex digits */

static void
follower_id(char *id, unsigned r)
{
    snprintf(id, 33, "000661d9899c%04x%016llx", r,
             (unsigned long long) rnd());
}


static size_t
size_env(const char *name, size_t dflt)
{
    char    *s, *end;
    size_t   n;

    s = getenv(name);
    if (s == NULL || *s == '\0') {
        return dflt;
    }

    n = strtoul(s, &end, 10);

    if (*end == 'k' || *end == 'K') {
        n *= 1024;

    } else if (*end == 'm' || *end == 'M') {
        n *= 1024 * 1024;
    }

    return n;
}


static size_t
put_u64(char *p, uint64_t v)
{
    int  i;

    for (i = 7; i >= 0; i--) {
        *p++ = (char) (v >> (i * 8));
    }

    return 8;
}


/* "<entity> 0x00 <table>": the module's key layout (docs/store.md) */

static size_t
prefix(char *buf, const char *entity, char table)
{
    size_t  n;

    n = strlen(entity);
    memcpy(buf, entity, n);
    buf[n++] = '\0';
    buf[n++] = table;

    return n;
}


static size_t
version(char *p)
{
    memcpy(p, "\0\0\0\0\1", 5);
    return 5;
}


static double
cpu_of(struct rusage *ru)
{
    return ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6
           + ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}


static unsigned long long
wchar(void)
{
    char                 line[128];
    FILE                *f;
    unsigned long long   n;

    n = 0;
    f = fopen("/proc/self/io", "r");
    if (f == NULL) {
        return 0;
    }

    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "wchar: %llu", &n) == 1) {
            break;
        }
    }

    fclose(f);

    return n;
}


static void
check(char *err)
{
    if (err) {
        fprintf(stderr, "store-limit: %s\n", err);
        exit(1);
    }
}


/*
 * What tent_same_node_rows index writes today for a fan-out's same-node
 * follower with no job (docs/federation.md, "No job for a same-node
 * recipient"), LevelDB alone: a step of STEP followers is one read of
 * each one's credential row, "l" row and block of the author (three
 * gets, as the step's MGET), then one unsynced write of each one's "l"
 * row, three feed rows and, with "status", the delivery's record and
 * its end index row; at the sizes a bench store holds them.  Into a
 * database of its own (DIR-index), the same options.
 */

static void
index_rows(const char *dir, leveldb_options_t *opt, unsigned n,
    unsigned step, int status, char rel[][33], char ent[][32])
{
    char                    *err, k[512], v[512], path[4096], pid[23], *got;
    double                   start, secs, cpu0;
    unsigned                 d, j, i, r, rows;
    uint64_t                 ms, us;
    size_t                   kl, vl, gl;
    struct rusage            ru;
    unsigned long long       w0, w1;
    leveldb_t               *db;
    leveldb_readoptions_t   *ro;
    leveldb_writeoptions_t  *wo;
    leveldb_writebatch_t    *wb;

    snprintf(path, sizeof(path), "%s-index%d", dir, status);

    err = NULL;
    db = leveldb_open(opt, path, &err);
    check(err);

    ro = leveldb_readoptions_create();
    wo = leveldb_writeoptions_create();
    wb = leveldb_writebatch_create();

    /* the credential rows the step reads */

    for (r = 0; r < RECIPIENTS; r++) {
        kl = prefix(k, ent[r], 'c');
        kl += (size_t) sprintf(k + kl, "s:%.32s", rel[r]);
        vl = (size_t) sprintf(v, "{\"kind\":\"following\",\"relation\":"
                              "\"%s\",\"entity\":\"" AUTHOR "\",\"key\":"
                              "\"%016llx%016llx\",\"algorithm\":\"hmac-sha-"
                              "256\",\"groups\":[]}", rel[r],
                              (unsigned long long) rnd(),
                              (unsigned long long) rnd());
        leveldb_writebatch_put(wb, k, kl, v, vl);
    }

    leveldb_write(db, wo, wb, &err);
    check(err);

    post_id(pid);
    rows = 0;

    getrusage(RUSAGE_SELF, &ru);
    cpu0 = cpu_of(&ru);
    w0 = wchar();
    start = now();

    for (d = 0; d < n; d += step) {

        /* the step's read: credential, "l" row, block, each follower */

        for (j = d; j < d + step && j < n; j++) {
            r = j % RECIPIENTS;

            if (r == 0) {
                post_id(pid);
            }

            kl = prefix(k, ent[r], 'c');
            kl += (size_t) sprintf(k + kl, "s:%.32s", rel[r]);
            got = leveldb_get(db, ro, k, kl, &gl, &err);
            free(got);
            kl = prefix(k, ent[r], 'l');
            kl += (size_t) sprintf(k + kl, AUTHOR "%c%s", 0, pid);
            got = leveldb_get(db, ro, k, kl, &gl, &err);
            free(got);
            kl = prefix(k, ent[r], 'b');
            kl += (size_t) sprintf(k + kl, AUTHOR);
            got = leveldb_get(db, ro, k, kl, &gl, &err);
            free(got);
        }

        /* the step's write, not synced */

        leveldb_writebatch_clear(wb);

        for (j = d; j < d + step && j < n; j++) {
            r = j % RECIPIENTS;
            ms = (T0 + j / 5000) * 1000 + j % 1000;
            us = ms * 1000 + j % 997;

            kl = prefix(k, ent[r], 'l');
            kl += (size_t) sprintf(k + kl, AUTHOR "%c%s", 0, pid);
            vl = (size_t) sprintf(v, "{\"l\":\"" AUTHOR "\",\"f\":\"%s\","
                                  "\"v\":1,\"rus\":%llu,\"received_at\":"
                                  "%llu,\"published_at\":%llu,"
                                  "\"updated_at\":%llu}", rel[0],
                                  (unsigned long long) us,
                                  (unsigned long long) ms,
                                  (unsigned long long) ms - 7,
                                  (unsigned long long) ms - 7);
            leveldb_writebatch_put(wb, k, kl, v, vl);
            rows++;

            for (i = 0; i < 3; i++) {
                kl = prefix(k, ent[r], 'i');
                k[kl++] = "rpu"[i];
                kl += put_u64(k + kl, ms / 1000);
                kl += put_u64(k + kl, us);
                kl += (size_t) sprintf(k + kl, AUTHOR "%c%s", 0, pid);
                vl = (size_t) sprintf(v, "{\"t\":\"https://tent.io/types/"
                                      "post/status\",\"p\":true,\"m\":[],"
                                      "\"mp\":[],\"l\":\"" AUTHOR "\","
                                      "\"f\":\"%s\",\"ra\":%llu}",
                                      rel[0], (unsigned long long) ms);
                leveldb_writebatch_put(wb, k, kl, v, vl);
                rows++;
            }

            if (!status) {
                continue;
            }

            kl = prefix(k, AUTHOR, 'D');
            kl += (size_t) sprintf(k + kl, "%s", pid);
            kl += version(k + kl);
            kl += (size_t) sprintf(k + kl, "%s", rel[r]);
            vl = (size_t) sprintf(v, "{\"entity\":\"%s\",\"state\":"
                                  "\"delivered\",\"attempts\":1,"
                                  "\"last_status\":200,\"last_error\":null,"
                                  "\"last_attempt_at\":%llu,"
                                  "\"next_attempt_at\":null}",
                                  ent[r], (unsigned long long) ms / 1000);
            leveldb_writebatch_put(wb, k, kl, v, vl);

            kl = prefix(k, AUTHOR, 'X');
            kl += put_u64(k + kl, ms);
            kl += (size_t) sprintf(k + kl, "%s", pid);
            kl += version(k + kl);
            kl += (size_t) sprintf(k + kl, "%s", rel[r]);
            leveldb_writebatch_put(wb, k, kl, "", 0);
            rows += 2;
        }

        leveldb_write(db, wo, wb, &err);
        check(err);
    }

    secs = now() - start;
    w1 = wchar();
    getrusage(RUSAGE_SELF, &ru);

    printf("store-limit: index%s: %u deliveries in %.3f s, %.0f "
           "deliveries/s (%.1f rows each%s, steps of %u: 3 gets each, one "
           "unsynced write; cpu %.2f s, %.1f us a delivery, %.0f bytes "
           "written a delivery)\n",
           status ? "" : " without status", n, secs, n / secs,
           (double) rows / n, status ? "" : ", no status record",
           step, cpu_of(&ru) - cpu0, (cpu_of(&ru) - cpu0) * 1e6 / n,
           (double) (w1 - w0) / n);

    fflush(stdout);

    leveldb_writebatch_destroy(wb);
    leveldb_writeoptions_destroy(wo);
    leveldb_readoptions_destroy(ro);
    leveldb_close(db);
    leveldb_destroy_db(opt, path, &err);
    free(err);
}


/*
 * The floor: one 64-byte row per recipient, BATCH rows a synced write,
 * in a database of its own with the same options; the value varies by
 * row (snappy would make nothing of one repeated byte).
 */

static void
baseline(const char *dir, leveldb_options_t *opt, unsigned n, unsigned batch)
{
    char                    *err, k[128], v[64], path[4096], pid[23];
    double                   start, secs, cpu0;
    unsigned                 d, j, i, r;
    uint64_t                 us, x;
    struct rusage            ru;
    unsigned long long       w0, w1;
    leveldb_t               *db;
    leveldb_writeoptions_t  *wo;
    leveldb_writebatch_t    *wb;
    size_t                   kl;

    snprintf(path, sizeof(path), "%s-rows", dir);

    err = NULL;
    db = leveldb_open(opt, path, &err);
    check(err);

    wo = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(wo, 1);
    wb = leveldb_writebatch_create();
    post_id(pid);

    getrusage(RUSAGE_SELF, &ru);
    cpu0 = cpu_of(&ru);
    w0 = wchar();
    start = now();

    for (d = 0; d < n; d += batch) {
        leveldb_writebatch_clear(wb);

        for (j = d; j < d + batch && j < n; j++) {
            r = j % RECIPIENTS;

            if (r == 0) {
                post_id(pid);
            }

            us = (T0 + j / 5000) * 1000000 + j;

            /* the recipient's feed row of the post: key as the module's */

            kl = (size_t) sprintf(k, "http://127.0.0.1:%u", 22701 + r);
            k[kl++] = '\0';
            k[kl++] = 'i';
            k[kl++] = 'r';
            kl += put_u64(k + kl, us / 1000000);
            kl += put_u64(k + kl, us);
            kl += (size_t) sprintf(k + kl, AUTHOR "%c%s", 0, pid);

            for (i = 0; i < sizeof(v); i += 8) {
                x = rnd();
                memcpy(v + i, &x, 8);
            }

            leveldb_writebatch_put(wb, k, kl, v, sizeof(v));
        }

        leveldb_write(db, wo, wb, &err);
        check(err);
    }

    secs = now() - start;
    w1 = wchar();
    getrusage(RUSAGE_SELF, &ru);

    printf("store-limit: baseline: %u rows of 64 bytes in %.3f s, %.0f "
           "rows/s (batch %u, each a synced write; cpu %.2f s, %.0f bytes "
           "written a row)\n",
           n, secs, n / secs, batch, cpu_of(&ru) - cpu0,
           (double) (w1 - w0) / n);

    leveldb_writebatch_destroy(wb);
    leveldb_writeoptions_destroy(wo);
    leveldb_close(db);
    leveldb_destroy_db(opt, path, &err);
    free(err);
}


int
main(int argc, char **argv)
{
    char                   *err, k[512], v[70000], *got, *p;
    char                    pid[23], rel[RECIPIENTS][33], ent[RECIPIENTS][32];
    char                  (*pids)[23];
    size_t                  kl, vl, post, tl, wbuf, mfile, bsize, cache;
    double                  start, secs, cpu, last, drain;
    unsigned                n, batch, i, j, d, r, snappy;
    uint64_t                ms, us;
    struct rusage           ru;
    unsigned long long      w0, w1;
    struct timespec         tick = { 0, 100000000 };
    const char             *comp;
    leveldb_t              *db;
    leveldb_cache_t        *bc;
    leveldb_options_t      *opt;
    leveldb_readoptions_t  *ro;
    leveldb_writeoptions_t *wo, *wa;
    leveldb_writebatch_t   *wb;
    leveldb_filterpolicy_t *bloom;
    static const char       words[] = " the quick brown fox jumps over a"
                                      " lazy dog, and posts about it";

    if (argc < 2) {
        fprintf(stderr, "usage: store-limit DIR [DELIVERIES [BATCH "
                "[POST_BYTES]]]\n");
        return 2;
    }

    n = argc > 2 ? (unsigned) atoi(argv[2]) : 20000;
    batch = argc > 3 ? (unsigned) atoi(argv[3]) : 256;
    post = argc > 4 ? (size_t) atoi(argv[4]) : 401;

    if (n == 0 || batch == 0 || post < 380 || post > 65536) {
        fprintf(stderr, "store-limit: bad arguments\n");
        return 2;
    }

    wbuf = size_env("LDB_WRITE_BUFFER", 16 << 20);
    mfile = size_env("LDB_MAX_FILE", 2 << 20);
    bsize = size_env("LDB_BLOCK_SIZE", 4096);
    cache = size_env("LDB_CACHE", 8 << 20);
    comp = getenv("LDB_COMPRESSION");
    snappy = comp == NULL || strcmp(comp, "none") != 0;

    opt = leveldb_options_create();
    bloom = leveldb_filterpolicy_create_bloom(10);
    bc = leveldb_cache_create_lru(cache);
    leveldb_options_set_create_if_missing(opt, 1);
    leveldb_options_set_filter_policy(opt, bloom);
    leveldb_options_set_write_buffer_size(opt, wbuf);
    leveldb_options_set_max_file_size(opt, mfile);
    leveldb_options_set_block_size(opt, bsize);
    leveldb_options_set_cache(opt, bc);
    leveldb_options_set_compression(opt, snappy ? leveldb_snappy_compression
                                                : leveldb_no_compression);
    ro = leveldb_readoptions_create();
    wo = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(wo, 1);
    wa = leveldb_writeoptions_create();

    err = NULL;
    db = leveldb_open(opt, argv[1], &err);
    check(err);

    /* the recipients and their credential rows, read by each batch */

    for (r = 0; r < RECIPIENTS; r++) {
        snprintf(ent[r], sizeof(ent[r]), "http://127.0.0.1:%u", 22701 + r);
        follower_id(rel[r], r);
        post_id(pid);
        kl = prefix(k, ent[r], 'c');
        kl += (size_t) sprintf(k + kl, "s:%.32s", rel[r]);
        vl = (size_t) sprintf(v, "{\"kind\":\"following\",\"relation\":\"%s\","
                              "\"entity\":\"" AUTHOR "\",\"key\":\"%016llx"
                              "%016llx\",\"algorithm\":\"hmac-sha-256\","
                              "\"mac_key_id\":\"s:%s\",\"groups\":[]}",
                              rel[r], (unsigned long long) rnd(),
                              (unsigned long long) rnd(), pid);
        leveldb_put(db, wo, k, kl, v, vl, &err);
        check(err);
    }

    /* each post's id: a batch may end one post's jobs and begin the next's */

    pids = malloc((n / RECIPIENTS + 1) * sizeof(*pids));
    if (pids == NULL) {
        return 1;
    }

    for (i = 0; i <= n / RECIPIENTS; i++) {
        post_id(pids[i]);
    }

    start = now();
    w0 = wchar();
    wb = leveldb_writebatch_create();

    for (d = 0; d < n; d += batch) {

        /* the fan-out: the jobs and their pending status, not synced */

        leveldb_writebatch_clear(wb);

        for (j = d; j < d + batch && j < n; j++) {
            r = j % RECIPIENTS;
            memcpy(pid, pids[j / RECIPIENTS], sizeof(pid));
            ms = (T0 + j / 5000) * 1000 + j % 1000;

            kl = prefix(k, AUTHOR, 'j');
            kl += put_u64(k + kl, ms);
            kl += (size_t) sprintf(k + kl, "%s%s", rel[r], pid);
            kl += version(k + kl);
            vl = (size_t) sprintf(v, "{\"follower\":\"%s\",\"entity\":\"%s\","
                                  "\"id\":\"%s\",\"version\":1,\"attempt\":0,"
                                  "\"first\":%llu,\"type\":\"https://tent.io/"
                                  "types/post/status/v0.1.0\",\"public\":true,"
                                  "\"local\":true,\"notification_url\":\"%s/"
                                  "tent/notifications\",\"batch\":%u}",
                                  rel[r], ent[r], pid,
                                  (unsigned long long) ms, ent[r], d);
            leveldb_writebatch_put(wb, k, kl, v, vl);

            kl = prefix(k, AUTHOR, 'D');
            kl += (size_t) sprintf(k + kl, "%s", pid);
            kl += version(k + kl);
            kl += (size_t) sprintf(k + kl, "%s", rel[r]);
            vl = (size_t) sprintf(v, "{\"entity\":\"%s\",\"state\":"
                                  "\"pending\",\"attempts\":0,"
                                  "\"last_status\":null,\"last_error\":null,"
                                  "\"last_attempt_at\":null,"
                                  "\"next_attempt_at\":%llu}",
                                  ent[r], (unsigned long long) ms / 1000);
            leveldb_writebatch_put(wb, k, kl, v, vl);
        }

        leveldb_write(db, wa, wb, &err);
        check(err);

        /* the MGET: each job's credential, and whether its copy is there */

        for (j = d; j < d + batch && j < n; j++) {
            r = j % RECIPIENTS;
            memcpy(pid, pids[j / RECIPIENTS], sizeof(pid));
            kl = prefix(k, ent[r], 'c');
            kl += (size_t) sprintf(k + kl, "s:%.32s", rel[r]);
            got = leveldb_get(db, ro, k, kl, &vl, &err);
            free(got);
            kl = prefix(k, ent[r], 't');
            kl += (size_t) sprintf(k + kl, AUTHOR "%c%s", 0, pid);
            got = leveldb_get(db, ro, k, kl, &vl, &err);
            free(got);
        }

        /* one synced write: the copies and the settlements */

        leveldb_writebatch_clear(wb);

        for (j = d; j < d + batch && j < n; j++) {
            r = j % RECIPIENTS;
            memcpy(pid, pids[j / RECIPIENTS], sizeof(pid));
            ms = (T0 + j / 5000) * 1000 + j % 1000;
            us = ms * 1000 + j % 997;

            /* the copy: its text padded to the post's size */

            vl = (size_t) sprintf(v, "{\"type\":\"https://tent.io/types/post/"
                                  "status/v0.1.0\",\"content\":{\"text\":"
                                  "\"fan-out bench %u", j / RECIPIENTS);
            tl = vl;
            p = v + vl;
            vl = (size_t) sprintf(p, "\"},\"published_at\":%llu,"
                                  "\"permissions\":{\"public\":true},"
                                  "\"licenses\":[],\"mentions\":[],"
                                  "\"entity\":\"" AUTHOR "\",\"id\":\"%s\","
                                  "\"app\":{\"name\":\"Demo owner app\","
                                  "\"url\":\"" AUTHOR "/\"},\"version\":1,"
                                  "\"received_at\":%llu,\"rus\":%llu,"
                                  "\"updated_at\":%llu,\"attachments\":[]}",
                                  (unsigned long long) T0 + j / 5000, pid,
                                  (unsigned long long) ms / 1000,
                                  (unsigned long long) us,
                                  (unsigned long long) ms / 1000);

            if (tl + vl < post) {
                memmove(v + post - vl, p, vl);
                for (i = 0; tl + i < post - vl; i++) {
                    v[tl + i] = words[(i + j / RECIPIENTS)
                                      % (sizeof(words) - 1)];
                }
            }

            vl = tl + vl > post ? tl + vl : post;

            kl = prefix(k, ent[r], 't');
            kl += (size_t) sprintf(k + kl, AUTHOR "%c%s", 0, pid);
            leveldb_writebatch_put(wb, k, kl, v, vl);
            kl = prefix(k, ent[r], 'v');
            kl += (size_t) sprintf(k + kl, AUTHOR "%c%s", 0, pid);
            kl += version(k + kl);
            leveldb_writebatch_put(wb, k, kl, v, vl);

            /* three feed index rows: by time, by type, by entity */

            for (i = 0; i < 3; i++) {
                kl = prefix(k, ent[r], 'i');
                k[kl++] = "rpu"[i];
                memcpy(k + kl, "\0\0\0", 3);
                kl += 3;
                kl += put_u64(k + kl, us);
                kl += (size_t) sprintf(k + kl, AUTHOR "%c%s", 0, pid);
                leveldb_writebatch_put(wb, k, kl,
                                       "{\"t\":\"https://tent.io/types/post/"
                                       "status\",\"p\":true,\"m\":[],"
                                       "\"mp\":[]}", 65);
            }

            kl = prefix(k, AUTHOR, 'j');
            kl += put_u64(k + kl, ms);
            kl += (size_t) sprintf(k + kl, "%s%s", rel[r], pid);
            kl += version(k + kl);
            leveldb_writebatch_delete(wb, k, kl);

            kl = prefix(k, AUTHOR, 'D');
            kl += (size_t) sprintf(k + kl, "%s", pid);
            kl += version(k + kl);
            kl += (size_t) sprintf(k + kl, "%s", rel[r]);
            vl = (size_t) sprintf(v, "{\"entity\":\"%s\",\"state\":"
                                  "\"delivered\",\"attempts\":1,"
                                  "\"last_status\":200,\"last_error\":null,"
                                  "\"last_attempt_at\":%llu,"
                                  "\"next_attempt_at\":null}",
                                  ent[r], (unsigned long long) ms / 1000);
            leveldb_writebatch_put(wb, k, kl, v, vl);

            kl = prefix(k, AUTHOR, 'X');
            kl += put_u64(k + kl, ms);
            kl += (size_t) sprintf(k + kl, "%s", pid);
            kl += version(k + kl);
            kl += (size_t) sprintf(k + kl, "%s", rel[r]);
            leveldb_writebatch_put(wb, k, kl, "", 0);
        }

        leveldb_write(db, wo, wb, &err);
        check(err);
    }

    secs = now() - start;
    getrusage(RUSAGE_SELF, &ru);
    cpu = cpu_of(&ru);
    w1 = wchar();

    /*
     * The compactions the writes made due go on after the last write:
     * their cost is the workload's too.  Until the process's CPU stays
     * still (LevelDB compacts while a level is over its size), 60 s at
     * most.
     */

    drain = now();
    last = cpu;

    for (i = 0; i < 600; i++) {
        nanosleep(&tick, NULL);
        getrusage(RUSAGE_SELF, &ru);

        if (cpu_of(&ru) - last < 0.005) {
            break;
        }

        last = cpu_of(&ru);
    }

    drain = now() - drain;

    printf("store-limit: %u deliveries in %.3f s, %.0f deliveries/s "
           "(batch %u, post %zu bytes; write buffer %zu, max file %zu, %s, "
           "block %zu, cache %zu; cpu %.2f s, %.0f bytes written a "
           "delivery; with the compactions after, %.1f s more: cpu %.2f s "
           "(%.1f us a delivery), %.0f bytes written a delivery)\n",
           n, secs, n / secs, batch, post, wbuf, mfile,
           snappy ? "snappy" : "no compression", bsize, cache, cpu,
           (double) (w1 - w0) / n, drain, last, last * 1e6 / n,
           (double) (wchar() - w0) / n);

    fflush(stdout);

    leveldb_writebatch_destroy(wb);
    leveldb_close(db);

    index_rows(argv[1], opt, n, 100, 1, rel, ent);
    index_rows(argv[1], opt, n, 100, 0, rel, ent);
    baseline(argv[1], opt, n, batch);

    leveldb_options_destroy(opt);
    leveldb_cache_destroy(bc);
    leveldb_filterpolicy_destroy(bloom);
    leveldb_readoptions_destroy(ro);
    leveldb_writeoptions_destroy(wo);
    leveldb_writeoptions_destroy(wa);
    free(pids);

    return 0;
}
