/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * ldb-dump DIR: every key of the LevelDB in DIR, hex, a tab, and the
 * value in hex when it is shorter than 64 KB ("-" otherwise).  For
 * suites that check rows no route shows, with nginx stopped (LevelDB
 * allows one process).  Built by the suite that needs it:
 *
 *     cc -o ldb-dump t/helpers/ldb-dump.c -lleveldb
 */


#include <stdio.h>
#include <stdlib.h>

#include <leveldb/c.h>


static void
hex(const char *p, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        printf("%02x", (unsigned char) p[i]);
    }
}


int
main(int argc, char **argv)
{
    char                      *err;
    size_t                     klen, vlen;
    const char                *k, *v;
    leveldb_t                 *db;
    leveldb_options_t         *opt;
    leveldb_iterator_t        *it;
    leveldb_readoptions_t     *ropt;

    if (argc != 2) {
        fprintf(stderr, "usage: ldb-dump DIR\n");
        return 2;
    }

    err = NULL;
    opt = leveldb_options_create();
    leveldb_options_set_create_if_missing(opt, 0);

    db = leveldb_open(opt, argv[1], &err);
    if (err != NULL) {
        fprintf(stderr, "ldb-dump: %s\n", err);
        return 1;
    }

    ropt = leveldb_readoptions_create();
    it = leveldb_create_iterator(db, ropt);

    for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
         leveldb_iter_next(it))
    {
        k = leveldb_iter_key(it, &klen);
        v = leveldb_iter_value(it, &vlen);

        hex(k, klen);
        printf("\t");

        if (vlen < 65536) {
            hex(v, vlen);

        } else {
            printf("-");
        }

        printf("\n");
    }

    leveldb_iter_destroy(it);
    leveldb_readoptions_destroy(ropt);
    leveldb_close(db);
    leveldb_options_destroy(opt);

    return 0;
}
