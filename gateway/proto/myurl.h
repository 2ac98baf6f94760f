/* A MySQL or MariaDB records database URL, read without a client library so that the daemon
 * refuses a malformed one at start (reccfg.c) and the recorder connects with what it says
 * (gateway/recorder/db_my.c):
 *   mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE           TCP (port 3306 when not given)
 *   mysql://USER[:PASSWORD]@[IPV6][:PORT]/DATABASE
 *   mysql://USER[:PASSWORD]@localhost/DATABASE?socket=PATH  a unix socket (PATH absolute)
 *   mysql://USER[:PASSWORD]@/DATABASE?socket=PATH           the same
 * "mariadb://" is the same, and so are SQLAlchemy's forms with a driver ("mysql+pymysql://",
 * "mariadb+mariadbconnector://": the seed's words; the driver is ignored), "unix_socket=" for
 * "socket=", and "charset=utf8mb4" (the only charset). USER, PASSWORD, DATABASE and PATH may be
 * percent-encoded (%40 for '@', %2F for '/', %3A for ':'). Errors name the part that is wrong and never quote the
 * password (nor the URL, which holds it). */
#ifndef ASSENT_MYURL_H
#define ASSENT_MYURL_H

#define MYURL_USER_MAX 128 /* bytes; MariaDB's user names are at most 80 characters */
#define MYURL_PASS_MAX 512
#define MYURL_HOST_MAX 255 /* a DNS name */
#define MYURL_DB_MAX 256   /* 64 characters of UTF-8 */
#define MYURL_SOCK_MAX 107 /* sun_path, less its NUL */
#define MYURL_PORT 3306

struct myurl {
	char user[MYURL_USER_MAX + 1];
	char pass[MYURL_PASS_MAX + 1]; /* "" when none; wipe with explicit_bzero when done */
	char host[MYURL_HOST_MAX + 1]; /* "" with a socket */
	char db[MYURL_DB_MAX + 1];
	char socket[MYURL_SOCK_MAX + 1]; /* "" for TCP */
	unsigned port;			 /* TCP; 0 with a socket */
	int has_pass;
};

/* 1 when url starts "mysql:" or "mariadb:" (any case, with or without "+DRIVER"): a URL of
 * this kind, well formed or not. */
int myurl_is(const char *url);
/* Parse url into *out (zeroed first). AS_EINVAL with err (AS_ERRLEN) naming what is wrong. */
int myurl_parse(const char *url, struct myurl *out, char *err);

#endif
