/* The loopback HTTP/1.1 client (http_client.h). */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http_client.h"
#include "util/vec.h"

int hc_connect(hc_conn *c, const char *host, unsigned port, unsigned timeout_s)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    int one = 1;
    struct timeval tv = {.tv_sec = (time_t)timeout_s};
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    c->fd = fd;
    return 0;
}

void hc_close(hc_conn *c)
{
    if (c->fd >= 0) close(c->fd);
    free(c->buf);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads more bytes into the buffer; 0 at the end of the stream, -1 on an error. */
static ssize_t fill(hc_conn *c)
{
    if (!vec_reserve(&c->buf, &c->cap, c->len + 4096 + 1, 1)) return -1;
    ssize_t k;
    do k = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
    while (k < 0 && errno == EINTR);
    if (k > 0) c->len += (size_t)k;
    return k;
}

int hc_header(const hc_conn *c, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = c->buf ? strstr(c->buf, "\r\n") : NULL; p && (size_t)(p - c->buf) < c->head; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            v += strspn(v, " \t");
            size_t vl = strcspn(v, "\r\n");
            snprintf(out, len, "%.*s", (int)vl, v);
            return 1;
        }
    }
    return 0;
}

static int read_answer(hc_conn *c, int head_only, int *status, const char **resp, size_t *resp_len)
{
    c->len = c->head = 0;
    char *end;
    for (;;) {
        if (c->buf) c->buf[c->len] = '\0';
        if (c->buf && (end = strstr(c->buf, "\r\n\r\n"))) break;
        if (c->len > (1u << 20) || fill(c) <= 0) return -1;
    }
    c->head = (size_t)(end - c->buf) + 4;
    int code;
    if (sscanf(c->buf, "HTTP/1.%*d %d", &code) != 1) return -1;
    char v[64];
    size_t body = 0;
    int closing = hc_header(c, "Connection", v, sizeof v) && strcasecmp(v, "close") == 0;
    if (hc_header(c, "Content-Length", v, sizeof v)) body = strtoull(v, NULL, 10);
    else if (hc_header(c, "Transfer-Encoding", v, sizeof v)) return -1; /* chunked: not ours */
    else if (!head_only) { /* no length: the body runs to the end of the stream */
        ssize_t k;
        while ((k = fill(c)) > 0) {}
        if (k < 0) return -1;
        body = c->len - c->head;
        closing = 1;
    }
    if (head_only) body = 0;
    while (c->len < c->head + body)
        if (fill(c) <= 0) return -1;
    if (c->len != c->head + body) return -1; /* bytes past the answer: nothing was asked for them */
    c->buf[c->len] = '\0';
    if (closing) {
        close(c->fd);
        c->fd = -1;
    }
    *status = code;
    *resp = c->buf + c->head;
    *resp_len = body;
    return 0;
}

int hc_request(hc_conn *c, const char *method, const char *path, const char *body, size_t len, int *status,
               const char **resp, size_t *resp_len)
{
    if (c->fd < 0) return -1;
    char head[1024];
    int n = body ? snprintf(head, sizeof head,
                            "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                            "Content-Length: %zu\r\n\r\n", method, path, len)
                 : snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: localhost\r\n\r\n", method, path);
    if (n < 0 || (size_t)n >= sizeof head) return -1;
    if (send_all(c->fd, head, (size_t)n) != 0 || (body && send_all(c->fd, body, len) != 0)) return -1;
    return read_answer(c, strcmp(method, "HEAD") == 0, status, resp, resp_len);
}

int hc_raw(hc_conn *c, const void *bytes, size_t len, int *status, const char **resp, size_t *resp_len)
{
    if (c->fd < 0 || send_all(c->fd, bytes, len) != 0) return -1;
    return read_answer(c, 0, status, resp, resp_len);
}
