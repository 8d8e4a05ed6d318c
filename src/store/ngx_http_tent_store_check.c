
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Can the store work?  Asked by the master while it reads the
 * configuration ("nginx -t", start, reload), and by the owner while it
 * cannot open the database.
 *
 * The workers run as nginx's "user"; the master, as root, creates the
 * store directory for them.  Before that, it asks the kernel whether
 * that user can enter every directory above the store, and, once the
 * store is made theirs, read and write it and create the socket: a
 * short-lived child takes the user's ids (setgid, initgroups, setuid)
 * and calls access() on each path, top down.  Reading owners and modes
 * and reasoning about them would miss ACLs, read-only mounts and
 * security modules, and get supplementary groups subtly wrong; the
 * kernel's own answer, in the user's own credentials, cannot.  The
 * child only calls access() and writes to a pipe, so it changes
 * nothing.  SIGCHLD is blocked in a reloading master and has no handler
 * yet at start or under -t: waitpid() finds our child.
 *
 * The database's lock is LevelDB's fcntl() lock on db/LOCK: F_GETLK
 * names the process that holds it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>


#define NGX_HTTP_TENT_CHECK_MAX     64       /* paths in one probe */

#define NGX_HTTP_TENT_CHECK_ENTER   X_OK
#define NGX_HTTP_TENT_CHECK_CREATE  (W_OK|X_OK)
#define NGX_HTTP_TENT_CHECK_DIR     (R_OK|W_OK|X_OK)
#define NGX_HTTP_TENT_CHECK_FILE    (R_OK|W_OK)


typedef struct {
    u_char                         *path;
    int                             mode;
    const char                     *directive;   /* whose path */
    ngx_str_t                      *value;
} ngx_http_tent_check_path_t;

typedef struct {
    ngx_cycle_t                    *cycle;
    ngx_log_t                      *log;
    ngx_pool_t                     *pool;
    ngx_uid_t                       uid;
    ngx_gid_t                       gid;
    const char                     *name;
    ngx_uint_t                      change;      /* setuid in the child */
    ngx_uint_t                      n;
    ngx_http_tent_check_path_t      paths[NGX_HTTP_TENT_CHECK_MAX];
} ngx_http_tent_check_t;

typedef struct {
    int                             index;       /* -1: the ids, n: all */
    int                             err;
} ngx_http_tent_check_result_t;


static ngx_int_t ngx_http_tent_check_user(ngx_http_tent_check_t *ck);
static ngx_int_t ngx_http_tent_check_parent(ngx_http_tent_check_t *ck,
    const char *directive, ngx_str_t *value, ngx_str_t *parent);
static ngx_int_t ngx_http_tent_check_add_dirs(ngx_http_tent_check_t *ck,
    const char *directive, ngx_str_t *value, ngx_str_t *dir, int last);
static ngx_int_t ngx_http_tent_check_add(ngx_http_tent_check_t *ck,
    const char *directive, ngx_str_t *value, u_char *path, size_t len,
    int mode);
static ngx_int_t ngx_http_tent_check_real_dir(ngx_http_tent_check_t *ck,
    ngx_str_t *store, ngx_str_t *path);
static ngx_int_t ngx_http_tent_check_create(ngx_http_tent_check_t *ck,
    ngx_http_tent_main_conf_t *mcf);
static ngx_int_t ngx_http_tent_check_run(ngx_http_tent_check_t *ck);
static void ngx_http_tent_check_child(ngx_http_tent_check_t *ck, int fd);
static void ngx_http_tent_check_report(ngx_http_tent_check_t *ck,
    ngx_http_tent_check_result_t *res);
static ngx_int_t ngx_http_tent_chown_dir(ngx_http_tent_check_t *ck,
    u_char *path);
static ngx_pid_t ngx_http_tent_parent_of(ngx_pid_t pid);
static ngx_pid_t ngx_http_tent_pid_file(ngx_str_t *name);


/*
 * The configuration is read (the end of the http block, or init_module
 * when "user" came after it): the store's parent must exist and the
 * workers' user must reach it; at start and reload the store (and its
 * db/) is created, its last component only, and given to that user, who
 * must then be able to use it and the socket's directory.  One emerg
 * line names the path, the user and what is missing.
 */

ngx_int_t
ngx_http_tent_store_check(ngx_cycle_t *cycle, ngx_log_t *log,
    ngx_pool_t *pool, ngx_http_tent_main_conf_t *mcf)
{
    ngx_int_t               rc;
    ngx_str_t               parent, sock_dir;
    struct stat             st;
    ngx_file_info_t         fi;
    ngx_http_tent_check_t  *ck;

    if (ngx_process == NGX_PROCESS_SIGNALLER) {
        return NGX_OK;
    }

    ck = ngx_pcalloc(pool, sizeof(ngx_http_tent_check_t));
    if (ck == NULL) {
        return NGX_ERROR;
    }

    ck->cycle = cycle;
    ck->log = log;
    ck->pool = pool;

    rc = ngx_http_tent_check_user(ck);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : NGX_ERROR;
    }

    mcf->store_uid = ck->uid;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "tent store check: as user \"%s\", uid %ui",
                   ck->name, (ngx_uint_t) ck->uid);

    if (ngx_http_tent_check_parent(ck, "tent_store", &mcf->store_path,
                                   &parent)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_file_info(mcf->store_path.data, &fi) != NGX_FILE_ERROR) {
        if (!ngx_is_dir(&fi)) {
            ngx_log_error(NGX_LOG_EMERG, log, 0,
                          "tent_store \"%V\" is not a directory",
                          &mcf->store_path);
            return NGX_ERROR;
        }

        /* no link the workers' user may have put there (chown_dir) */

        if (ngx_http_tent_check_real_dir(ck, &mcf->store_path,
                                         &mcf->store_path)
            != NGX_OK
            || (lstat((char *) mcf->db_path.data, &st) == 0
                && ngx_http_tent_check_real_dir(ck, &mcf->store_path,
                                                &mcf->db_path)
                   != NGX_OK))
        {
            return NGX_ERROR;
        }

    } else if (ngx_errno != NGX_ENOENT) {
        ngx_log_error(NGX_LOG_EMERG, log, ngx_errno,
                      "tent_store \"%V\": " ngx_file_info_n " failed",
                      &mcf->store_path);
        return NGX_ERROR;
    }

    /* the way down to the store, for its user */

    if (ngx_http_tent_check_add_dirs(ck, "tent_store", &mcf->store_path,
                                     &parent, NGX_HTTP_TENT_CHECK_ENTER)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* a socket elsewhere: its directory takes the user's socket */

    if (ngx_strncmp(mcf->socket_path.data, mcf->store_path.data,
                    mcf->store_path.len) != 0
        || mcf->socket_path.data[mcf->store_path.len] != '/'
        || ngx_strlchr(mcf->socket_path.data + mcf->store_path.len + 1,
                       mcf->socket_path.data + mcf->socket_path.len, '/'))
    {
        if (ngx_http_tent_check_parent(ck, "tent_store_socket",
                                       &mcf->socket_path, &sock_dir)
            != NGX_OK
            || ngx_http_tent_check_add_dirs(ck, "tent_store_socket",
                                            &mcf->socket_path, &sock_dir,
                                            NGX_HTTP_TENT_CHECK_CREATE)
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ngx_http_tent_check_run(ck) != NGX_OK) {
        return NGX_ERROR;
    }

    /*
     * nginx -t changes nothing: the start makes the store the user's,
     * so only the way to it can fail for them yet.  At start, the way
     * was checked before anything is made; then the store itself.
     */

    if (ngx_test_config) {
        return NGX_OK;
    }

    ck->n = 0;

    if (ngx_http_tent_check_create(ck, mcf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_tent_check_run(ck);
}


/* the workers' user, as nginx sets it (ngx_core_module_init_conf) */

static ngx_int_t
ngx_http_tent_check_user(ngx_http_tent_check_t *ck)
{
    struct group     *grp;
    struct passwd    *pwd;
    ngx_core_conf_t  *ccf;

    ccf = (ngx_core_conf_t *) ngx_get_conf(ck->cycle->conf_ctx,
                                           ngx_core_module);

    if (geteuid() != 0 || ccf->master == 0) {

        /* no change of user: the workers are this process's user */

        ck->uid = geteuid();
        ck->gid = getegid();

        pwd = getpwuid(ck->uid);

        if (pwd == NULL) {
            ck->name = "(this process's user)";
            return NGX_OK;
        }

        ck->name = (char *) ngx_pnalloc(ck->pool,
                                        ngx_strlen(pwd->pw_name) + 1);
        if (ck->name == NULL) {
            return NGX_ERROR;
        }

        (void) ngx_cpystrn((u_char *) ck->name, (u_char *) pwd->pw_name,
                           ngx_strlen(pwd->pw_name) + 1);

        return NGX_OK;
    }

    ck->change = 1;

    if (ccf->user != (ngx_uid_t) NGX_CONF_UNSET_UINT && ccf->username) {
        ck->uid = ccf->user;
        ck->gid = ccf->group;
        ck->name = ccf->username;
        return NGX_OK;
    }

    /* no "user" yet (it may come after the http block): nginx's default */

    pwd = getpwnam(NGX_USER);
    grp = getgrnam(NGX_GROUP);

    if (pwd == NULL || grp == NULL) {
        return NGX_DECLINED;
    }

    ck->uid = pwd->pw_uid;
    ck->gid = grp->gr_gid;
    ck->name = NGX_USER;

    return NGX_OK;
}


/* the directory a path is made in: it must exist, the master makes none */

static ngx_int_t
ngx_http_tent_check_parent(ngx_http_tent_check_t *ck, const char *directive,
    ngx_str_t *value, ngx_str_t *parent)
{
    u_char           *p;
    ngx_file_info_t   fi;

    p = value->data + value->len;

    while (p > value->data && p[-1] != '/') {
        p--;
    }

    if (p == value->data || p == value->data + value->len) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, 0,
                      "%s \"%V\" must be a path with a directory above it",
                      directive, value);
        return NGX_ERROR;
    }

    parent->len = (p - 1 == value->data) ? 1 : (size_t) (p - 1 - value->data);
    parent->data = ngx_pnalloc(ck->pool, parent->len + 1);
    if (parent->data == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn(parent->data, value->data, parent->len + 1);

    if (ngx_file_info(parent->data, &fi) == NGX_FILE_ERROR) {
        if (ngx_errno == NGX_ENOENT || ngx_errno == NGX_ENOTDIR) {
            ngx_log_error(NGX_LOG_EMERG, ck->log, 0,
                          "%s \"%V\": the directory \"%V\" does not exist "
                          "(nginx creates only the last component)",
                          directive, value, parent);

        } else {
            ngx_log_error(NGX_LOG_EMERG, ck->log, ngx_errno,
                          "%s \"%V\": " ngx_file_info_n " \"%V\" failed",
                          directive, value, parent);
        }

        return NGX_ERROR;
    }

    if (!ngx_is_dir(&fi)) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, 0,
                      "%s \"%V\": \"%V\" is not a directory",
                      directive, value, parent);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* "/", "/a", "/a/b" to enter, then "dir" itself with "last" */

static ngx_int_t
ngx_http_tent_check_add_dirs(ngx_http_tent_check_t *ck,
    const char *directive, ngx_str_t *value, ngx_str_t *dir, int last)
{
    u_char  *p, *end;

    end = dir->data + dir->len;

    if (dir->len > 1) {
        if (ngx_http_tent_check_add(ck, directive, value, dir->data, 1,
                                    NGX_HTTP_TENT_CHECK_ENTER)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        for (p = dir->data + 1; p < end; p++) {
            if (*p == '/'
                && ngx_http_tent_check_add(ck, directive, value, dir->data,
                                           p - dir->data,
                                           NGX_HTTP_TENT_CHECK_ENTER)
                   != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    return ngx_http_tent_check_add(ck, directive, value, dir->data, dir->len,
                                   last);
}


static ngx_int_t
ngx_http_tent_check_add(ngx_http_tent_check_t *ck, const char *directive,
    ngx_str_t *value, u_char *path, size_t len, int mode)
{
    ngx_http_tent_check_path_t  *cp;

    if (ck->n == NGX_HTTP_TENT_CHECK_MAX) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, 0,
                      "%s \"%V\" is too deep: at most %d directories",
                      directive, value, NGX_HTTP_TENT_CHECK_MAX - 8);
        return NGX_ERROR;
    }

    cp = &ck->paths[ck->n];

    cp->path = ngx_pnalloc(ck->pool, len + 1);
    if (cp->path == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn(cp->path, path, len + 1);

    cp->mode = mode;
    cp->directive = directive;
    cp->value = value;

    ck->n++;

    return NGX_OK;
}


/*
 * Start and reload: the store and its db/, each made if missing (mode
 * 0700, never a parent), then given to the workers' user with what is
 * in them (a store made by root before, or restored as root: the
 * database's files).  The user must then use them all.
 */

static ngx_int_t
ngx_http_tent_check_create(ngx_http_tent_check_t *ck,
    ngx_http_tent_main_conf_t *mcf)
{
    u_char           *lock;
    ngx_str_t        *store, *db;
    ngx_file_info_t   fi;

    store = &mcf->store_path;
    db = &mcf->db_path;

    if (ngx_create_dir(store->data, 0700) == NGX_FILE_ERROR
        && ngx_errno != NGX_EEXIST)
    {
        ngx_log_error(NGX_LOG_EMERG, ck->log, ngx_errno,
                      "tent_store \"%V\": cannot create it", store);
        return NGX_ERROR;
    }

    if (ngx_http_tent_check_real_dir(ck, store, store) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_create_dir(db->data, 0700) == NGX_FILE_ERROR
        && ngx_errno != NGX_EEXIST)
    {
        ngx_log_error(NGX_LOG_EMERG, ck->log, ngx_errno,
                      "tent_store \"%V\": cannot create \"%V\"", store, db);
        return NGX_ERROR;
    }

    if (ngx_http_tent_check_real_dir(ck, store, db) != NGX_OK) {
        return NGX_ERROR;
    }

    /* workers run as "user": the directory and the database are theirs */

    if (ck->change
        && (ngx_http_tent_chown_dir(ck, store->data) != NGX_OK
            || ngx_http_tent_chown_dir(ck, db->data) != NGX_OK))
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_check_add(ck, "tent_store", store, store->data,
                                store->len, NGX_HTTP_TENT_CHECK_DIR)
        != NGX_OK
        || ngx_http_tent_check_add(ck, "tent_store", store, db->data,
                                   db->len, NGX_HTTP_TENT_CHECK_DIR)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    lock = ngx_pnalloc(ck->pool, db->len + sizeof("/LOCK"));
    if (lock == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_sprintf(lock, "%V/LOCK%Z", db);

    if (ngx_file_info(lock, &fi) != NGX_FILE_ERROR) {
        return ngx_http_tent_check_add(ck, "tent_store", store, lock,
                                       db->len + sizeof("/LOCK") - 1,
                                       NGX_HTTP_TENT_CHECK_FILE);
    }

    return NGX_OK;
}


/*
 * The store and db/ belong to the workers' user, who may replace either
 * by a symbolic link (to /etc...): root would then chown its target.
 * lstat() refuses one; the open below (O_NOFOLLOW) closes the race.
 */

static ngx_int_t
ngx_http_tent_check_real_dir(ngx_http_tent_check_t *ck, ngx_str_t *store,
    ngx_str_t *path)
{
    struct stat  st;

    if (lstat((char *) path->data, &st) == -1) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, ngx_errno,
                      "tent_store \"%V\": lstat(\"%V\") failed", store, path);
        return NGX_ERROR;
    }

    if (S_ISLNK(st.st_mode)) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, 0,
                      "tent_store \"%V\": \"%V\" is a symbolic link",
                      store, path);
        return NGX_ERROR;
    }

    if (!S_ISDIR(st.st_mode)) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, 0,
                      "tent_store \"%V\": \"%V\" is not a directory",
                      store, path);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The directory, opened without following a link, then its regular
 * files not yet the user's: never a link, a device, a FIFO or a file
 * with another name elsewhere (a hard link to root's file).
 */

static ngx_int_t
ngx_http_tent_chown_dir(ngx_http_tent_check_t *ck, u_char *path)
{
    int             fd;
    DIR            *dir;
    struct stat     st;
    struct dirent  *de;

    fd = open((char *) path,
              O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, ngx_errno,
                      "tent_store: \"%s\" is not a directory (or a link "
                      "to one)", path);
        return NGX_ERROR;
    }

    if (fchown(fd, ck->uid, ck->gid) == -1) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, ngx_errno,
                      "tent_store: chown(\"%s\", \"%s\") failed",
                      path, ck->name);
        (void) close(fd);
        return NGX_ERROR;
    }

    dir = fdopendir(fd);
    if (dir == NULL) {
        (void) close(fd);
        return NGX_OK;
    }

    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.'
            && (de->d_name[1] == '\0'
                || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
        {
            continue;
        }

        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1
            || !S_ISREG(st.st_mode) || st.st_nlink > 1
            || (st.st_uid == ck->uid && st.st_gid == ck->gid))
        {
            continue;
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ck->log, 0,
                       "tent store: chown \"%s/%s\"", path, de->d_name);

        if (fchownat(fd, de->d_name, ck->uid, ck->gid, AT_SYMLINK_NOFOLLOW)
            == -1)
        {
            ngx_log_error(NGX_LOG_WARN, ck->log, ngx_errno,
                          "chown(\"%s/%s\") failed", path, de->d_name);
        }
    }

    (void) closedir(dir);

    return NGX_OK;
}


/* the probe: a child with the user's ids asks access() of each path */

static ngx_int_t
ngx_http_tent_check_run(ngx_http_tent_check_t *ck)
{
    int                            fds[2], status;
    ssize_t                        n;
    ngx_pid_t                      pid;
    ngx_http_tent_check_result_t   res;

    if (ck->n == 0) {
        return NGX_OK;
    }

    if (pipe(fds) == -1) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, ngx_errno,
                      "tent_store: pipe() failed");
        return NGX_ERROR;
    }

    pid = fork();

    if (pid == -1) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, ngx_errno,
                      "tent_store: fork() failed");
        (void) close(fds[0]);
        (void) close(fds[1]);
        return NGX_ERROR;
    }

    if (pid == 0) {
        (void) close(fds[0]);
        ngx_http_tent_check_child(ck, fds[1]);
        _exit(0);
    }

    (void) close(fds[1]);

    do {
        n = read(fds[0], &res, sizeof(res));
    } while (n == -1 && ngx_errno == NGX_EINTR);

    (void) close(fds[0]);

    while (waitpid(pid, &status, 0) == -1 && ngx_errno == NGX_EINTR) {
        /* void */
    }

    if (n != (ssize_t) sizeof(res)) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, 0,
                      "tent_store: the check as user \"%s\" gave no answer",
                      ck->name);
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ck->log, 0,
                   "tent store check: %d of %ui", res.index, ck->n);

    if (res.index == (int) ck->n) {
        return NGX_OK;
    }

    ngx_http_tent_check_report(ck, &res);

    return NGX_ERROR;
}


/* in the child: nothing but syscalls, then _exit() */

static void
ngx_http_tent_check_child(ngx_http_tent_check_t *ck, int fd)
{
    ssize_t                       n;
    ngx_uint_t                    i;
    ngx_http_tent_check_result_t  res;

    res.index = -1;
    res.err = 0;

    if (ck->change
        && (setgid(ck->gid) == -1
            || initgroups(ck->name, ck->gid) == -1
            || setuid(ck->uid) == -1))
    {
        res.err = errno;
        n = write(fd, &res, sizeof(res));
        (void) n;
        return;
    }

    for (i = 0; i < ck->n; i++) {
        if (access((char *) ck->paths[i].path, ck->paths[i].mode) == -1) {
            break;
        }
    }

    res.index = (int) i;
    res.err = (i < ck->n) ? errno : 0;

    /* a short write is "no answer" to the parent */

    n = write(fd, &res, sizeof(res));
    (void) n;
}


/* one line: the directive's path, the user, what they cannot do where */

static void
ngx_http_tent_check_report(ngx_http_tent_check_t *ck,
    ngx_http_tent_check_result_t *res)
{
    u_char                      owner[64], group[64];
    ngx_err_t                   err;
    ngx_uint_t                  mode;
    const char                 *what;
    struct group               *grp;
    struct passwd              *pwd;
    ngx_file_info_t             fi;
    ngx_http_tent_check_path_t  *cp;

    if (res->index < 0 || res->index >= (int) ck->n) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, res->err,
                      "tent_store: cannot take the ids of user \"%s\"",
                      ck->name);
        return;
    }

    cp = &ck->paths[res->index];

    switch (cp->mode) {

    case NGX_HTTP_TENT_CHECK_ENTER:
        what = "enter";
        break;

    case NGX_HTTP_TENT_CHECK_CREATE:
        what = "create files in";
        break;

    default:
        what = "read and write";
    }

    /* EACCES is what the mode says; another error (EROFS) is shown */

    err = (res->err == NGX_EACCES) ? 0 : res->err;

    if (ngx_file_info(cp->path, &fi) == NGX_FILE_ERROR) {
        ngx_log_error(NGX_LOG_EMERG, ck->log, err,
                      "%s \"%V\": user \"%s\" cannot %s \"%s\"",
                      cp->directive, cp->value, ck->name, what, cp->path);
        return;
    }

    pwd = getpwuid(fi.st_uid);
    if (pwd) {
        (void) ngx_cpystrn(owner, (u_char *) pwd->pw_name, sizeof(owner));
    } else {
        (void) ngx_snprintf(owner, sizeof(owner), "%ui%Z",
                            (ngx_uint_t) fi.st_uid);
    }

    grp = getgrgid(fi.st_gid);
    if (grp) {
        (void) ngx_cpystrn(group, (u_char *) grp->gr_name, sizeof(group));
    } else {
        (void) ngx_snprintf(group, sizeof(group), "%ui%Z",
                            (ngx_uint_t) fi.st_gid);
    }

    /* in octal, as ls and chmod say it (nginx prints no %o) */

    mode = fi.st_mode & 07777;

    ngx_log_error(NGX_LOG_EMERG, ck->log, err,
                  "%s \"%V\": user \"%s\" cannot %s \"%s\" "
                  "(mode %ui%ui%ui%ui, owner %s, group %s)",
                  cp->directive, cp->value, ck->name, what, cp->path,
                  (mode >> 9) & 7, (mode >> 6) & 7, (mode >> 3) & 7,
                  mode & 7, owner, group);
}


/*
 * Who holds LevelDB's lock on "db/LOCK": 0 nobody, -1 unknown (an
 * open-file-description lock).  Never in a process that has the
 * database open: closing any descriptor of the file drops its own
 * fcntl() locks.
 */

ngx_pid_t
ngx_http_tent_store_lock_holder(ngx_str_t *db_path)
{
    int           fd;
    u_char        path[NGX_MAX_PATH];
    struct stat   st;
    struct flock  fl;

    if (db_path->len + sizeof("/LOCK") > sizeof(path)) {
        return -1;
    }

    (void) ngx_sprintf(path, "%V/LOCK%Z", db_path);

    /* a FIFO put there by the workers' user must not block us */

    fd = open((char *) path, O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC);
    if (fd == -1) {
        return (ngx_errno == ELOOP) ? NGX_HTTP_TENT_LOCK_NOT_FILE : 0;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
        (void) close(fd);
        return NGX_HTTP_TENT_LOCK_NOT_FILE;
    }

    ngx_memzero(&fl, sizeof(struct flock));
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;

    if (fcntl(fd, F_GETLK, &fl) == -1) {
        (void) close(fd);
        return -1;
    }

    (void) close(fd);

    if (fl.l_type == F_UNLCK) {
        return 0;
    }

    return (fl.l_pid > 0) ? fl.l_pid : -1;
}


/*
 * nginx -t, start, reload, in the master: a store another process
 * holds.  Our own nginx's worker holds it on a reload (we are its
 * parent), on a binary upgrade (our parent, the old master, is its
 * parent) and under -t on a running server (the pid file's master, or
 * the ".oldbin" one during an upgrade, is its parent): silence.
 * Another holder is said, never refused: the owner waits for the lock
 * (and says so every minute, at error).
 */

void
ngx_http_tent_store_lock_check(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf)
{
    ngx_uint_t        level;
    ngx_pid_t         holder, parent, running, old;
    ngx_core_conf_t  *ccf;

    if (ngx_process == NGX_PROCESS_SIGNALLER) {
        return;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    /*
     * "master_process off": this process may hold the database, and
     * closing LOCK here would drop LevelDB's fcntl() lock on it
     */

    if (!ccf->master
        || (ngx_process == NGX_PROCESS_SINGLE
            && cycle->old_cycle->conf_ctx != NULL))
    {
        return;
    }

    holder = ngx_http_tent_store_lock_holder(&mcf->db_path);

    if (holder == 0) {
        return;
    }

    if (holder == NGX_HTTP_TENT_LOCK_NOT_FILE) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "tent_store \"%V\": \"%V/LOCK\" is not a regular "
                      "file, its lock is not checked",
                      &mcf->store_path, &mcf->db_path);
        return;
    }

    parent = (holder > 0) ? ngx_http_tent_parent_of(holder) : 0;
    running = ngx_test_config ? ngx_http_tent_pid_file(&ccf->pid) : 0;
    old = ngx_test_config ? ngx_http_tent_pid_file(&ccf->oldpid) : 0;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "tent store: lock held by %P, its parent %P, "
                   "running master %P", holder, parent, running);

    if (holder > 0
        && (parent == ngx_getpid() || parent == getppid()
            || holder == getppid()
            || (running > 0 && (parent == running || holder == running))
            || (old > 0 && (parent == old || holder == old))))
    {
        return;
    }

    /* -t: the holder may be gone at start; a start: the owner will wait */

    level = ngx_test_config ? NGX_LOG_WARN : NGX_LOG_ERR;

    if (holder > 0) {
        ngx_log_error(level, cycle->log, 0,
                      "tent store \"%V\" is locked by another process "
                      "(pid %P): the store owner will wait for it, and "
                      "every request needing the store gets 503",
                      &mcf->store_path, holder);
        return;
    }

    ngx_log_error(level, cycle->log, 0,
                  "tent store \"%V\" is locked by another process "
                  "(pid unknown): the store owner will wait for it, and "
                  "every request needing the store gets 503",
                  &mcf->store_path);
}


/*
 * Is PID a process of our nginx?  With "master_process off" only this
 * one is (no reload hands the store over to another process; another
 * such nginx started from the same shell is a sibling, not ours).  In a
 * worker: a worker of our nginx.  A sibling (our master's
 * child: the old owner on a reload), or across a binary upgrade a
 * worker of our master's parent (we are the new binary) or of its
 * child (we are the old one).  Anything else is another nginx: its
 * store socket is not ours to take, nor ours to use.  A pid whose
 * parent /proc does not show is taken for ours: without /proc no
 * owner could be told from another, and refusing would refuse ours.
 */

ngx_uint_t
ngx_http_tent_store_kin(ngx_pid_t pid)
{
    ngx_pid_t  master, parent, grand;

    if (pid <= 0) {
        return 0;
    }

    if (ngx_process == NGX_PROCESS_SINGLE) {
        return (pid == ngx_pid);
    }

    master = getppid();
    parent = ngx_http_tent_parent_of(pid);

    /* no /proc to tell (a chroot): ours, as before this was asked */

    if (parent == 0) {
        return 1;
    }

    /* first: a master may be pid 1 itself (a container's) */

    if (parent == master) {
        return 1;
    }

    if (parent == 1) {
        return 0;       /* an orphan: its nginx is gone */
    }

    if (parent == ngx_http_tent_parent_of(master)) {
        return 1;
    }

    grand = ngx_http_tent_parent_of(parent);

    return (grand == master);
}


/* the parent of a process, from /proc/PID/stat: "pid (comm) S ppid" */

static ngx_pid_t
ngx_http_tent_parent_of(ngx_pid_t pid)
{
    int       fd;
    u_char    buf[512], path[64], *p, *last;
    ssize_t   n;

    (void) ngx_sprintf(path, "/proc/%P/stat%Z", pid);

    fd = open((char *) path, O_RDONLY|O_CLOEXEC);
    if (fd == -1) {
        return 0;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    (void) close(fd);

    if (n <= 0) {
        return 0;
    }

    last = buf + n;

    /* the command may hold ")": the last one ends it */

    for (p = last; p > buf && p[-1] != ')'; p--) { /* void */ }

    if (p == buf || last - p < 4) {
        return 0;
    }

    p += 3;                                  /* " S " */

    n = 0;

    while (p < last && *p >= '0' && *p <= '9') {
        n = n * 10 + (*p++ - '0');
    }

    return (ngx_pid_t) n;
}


static ngx_pid_t
ngx_http_tent_pid_file(ngx_str_t *name)
{
    int        fd;
    u_char     buf[32], *p;
    ssize_t    n;
    ngx_int_t  pid;

    if (name->data == NULL) {
        return 0;
    }

    fd = open((char *) name->data, O_RDONLY|O_CLOEXEC);
    if (fd == -1) {
        return 0;
    }

    n = read(fd, buf, sizeof(buf));
    (void) close(fd);

    if (n <= 0) {
        return 0;
    }

    for (p = buf; p < buf + n && *p >= '0' && *p <= '9'; p++) { /* void */ }

    pid = ngx_atoi(buf, p - buf);

    return (pid > 0) ? (ngx_pid_t) pid : 0;
}
