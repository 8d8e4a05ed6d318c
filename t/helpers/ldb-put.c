/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * ldb-put DIR KEY VALUE: store one row (key and value in hex) into the
 * LevelDB in DIR, as an older version of the module may have written
 * it.  For suites that check what the module does with rows it would no
 * longer write, with nginx stopped (LevelDB allows one process):
 *
 *     cc -o ldb-put t/helpers/ldb-put.c -lleveldb
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>


static char *
unhex(const char *s, size_t *len)
{
    char          *out;
    size_t         i, n;
    unsigned int   b;

    n = strlen(s);

    if (n % 2) {
        return NULL;
    }

    out = malloc(n / 2 + 1);
    if (out == NULL) {
        return NULL;
    }

    for (i = 0; i < n / 2; i++) {
        if (sscanf(s + 2 * i, "%2x", &b) != 1) {
            free(out);
            return NULL;
        }

        out[i] = (char) b;
    }

    *len = n / 2;

    return out;
}


int
main(int argc, char **argv)
{
    char                    *err, *k, *v;
    size_t                   klen, vlen;
    leveldb_t               *db;
    leveldb_options_t       *opt;
    leveldb_writeoptions_t  *wopt;

    if (argc != 4) {
        fprintf(stderr, "usage: ldb-put DIR KEYHEX VALUEHEX\n");
        return 2;
    }

    k = unhex(argv[2], &klen);
    v = unhex(argv[3], &vlen);

    if (k == NULL || v == NULL) {
        fprintf(stderr, "ldb-put: key and value must be hex\n");
        return 2;
    }

    err = NULL;
    opt = leveldb_options_create();
    leveldb_options_set_create_if_missing(opt, 0);

    db = leveldb_open(opt, argv[1], &err);
    if (err != NULL) {
        fprintf(stderr, "ldb-put: %s\n", err);
        return 1;
    }

    wopt = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(wopt, 1);

    leveldb_put(db, wopt, k, klen, v, vlen, &err);
    if (err != NULL) {
        fprintf(stderr, "ldb-put: %s\n", err);
        return 1;
    }

    leveldb_writeoptions_destroy(wopt);
    leveldb_close(db);
    leveldb_options_destroy(opt);
    free(k);
    free(v);

    return 0;
}
