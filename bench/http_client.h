/* A minimal HTTP/1.1 client for loopback: the load generator of `bench serve` and the server's
 * tests. One request at a time on a keep-alive connection, bodies sized by Content-Length (what
 * the server sends); no chunked answers, no TLS, no redirects. It is a measuring instrument for
 * our own server, not a general client: a real client should use libcurl. */
#ifndef CLS_HTTP_CLIENT_H
#define CLS_HTTP_CLIENT_H

#include <stddef.h>

typedef struct hc_conn {
    int fd;
    char *buf;       /* the last answer: head, then body (NUL-terminated) */
    size_t len, cap;
    size_t head;     /* bytes of the last answer's head, its blank line included */
} hc_conn;

/* Connects to the IPv4 address host (numeric) at port, with TCP_NODELAY and a receive timeout of
 * timeout_s seconds (a server that stops answering fails the call instead of hanging it).
 * 0, or -1 with errno. */
int hc_connect(hc_conn *c, const char *host, unsigned port, unsigned timeout_s);
/* Sends method path with body (len bytes; none when NULL) and reads the answer: *status, and
 * *resp (NUL-terminated, *resp_len bytes; valid until the next call on c). 0, or -1 when the
 * connection failed or was closed, or the answer could not be read. */
int hc_request(hc_conn *c, const char *method, const char *path, const char *body, size_t len, int *status,
               const char **resp, size_t *resp_len);
/* Sends bytes as they are (a malformed request), then reads an answer as hc_request does. */
int hc_raw(hc_conn *c, const void *bytes, size_t len, int *status, const char **resp, size_t *resp_len);
/* The value of header name (case-insensitive) in the last answer's head, copied into out
 * (len bytes); 0 when absent. */
int hc_header(const hc_conn *c, const char *name, char *out, size_t len);
void hc_close(hc_conn *c);

#endif
