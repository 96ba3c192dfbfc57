/* The server's own account of its connections, for what libmicrohttpd does not do: a deadline for
 * a whole request that trickled bytes cannot extend, room for new clients when the connection
 * limits are reached, and a shutdown that closes only idle connections.
 *
 * libmicrohttpd's timeout is an idle timeout: each byte received restarts it, so a client sending
 * one byte every few seconds holds its connection for ever, and its per-address limit refuses
 * the newcomer, so slow clients at the limit keep everyone else out. Here each connection is in
 * one of three lists, oldest first, and leaves it at a hard deadline:
 *   idle     no request line since it opened or since its last answer: --timeout
 *   reading  a request line arrived, the headers or body are still coming: --request-timeout
 *   sending  its answer is queued and not yet taken by the client: --request-timeout
 * and in none while its request is whole and waiting for the batcher (that wait is ours, not the
 * client's). A connection past its deadline, or chosen to make room, has its socket shut down:
 * libmicrohttpd then reads the end of the stream and closes it as it closes any, calling back
 * NOTIFY_CONNECTION's CLOSED before it closes the descriptor; the descriptor is only touched under
 * cmu, and CLOSED takes cmu, so it is never one that was closed and reused.
 *
 * Room: a connection that takes the count past --max-conns, or its address's past
 * --max-conns-per-ip, closes the oldest connection of the same scope that has no whole request
 * (idle ones first, then slow ones; one accepted in the last CONN_GRACE_S only where no older one
 * can go). A well-behaved client is the newest and sends its request at once, so slow clients
 * cannot push it out unless they open more connections than the limit while its request is on
 * the way. Where every connection of the scope has a request being
 * answered, the newcomer is answered 503 once its headers are in, and closed. libmicrohttpd's
 * own limit sits above --max-conns by a reserve, for the moments between choosing a connection to
 * close and its closing. */
#define _DEFAULT_SOURCE
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "srv_internal.h"

/* How long a keep-alive connection must have been idle before a shutdown closes it: a client that
 * just had an answer sends its next request within this, and that request is then answered (503,
 * Connection: close) instead of meeting a closed connection. */
#define IDLE_GRACE_S 1.0

static double list_timeout(const srv *s, int list)
{
    return list == CONN_IDLE ? (double)s->o.timeout_s : (double)s->o.request_timeout_s;
}

static void unlink_list(srv *s, srv_conn *c)
{
    if (c->list < 0) return;
    conn_q *q = &s->lists[c->list];
    if (c->prev) c->prev->next = c->next;
    else q->head = c->next;
    if (c->next) c->next->prev = c->prev;
    else q->tail = c->prev;
    c->prev = c->next = NULL;
    c->list = -1;
}

/* Moves c to the end of list (-1: none), its deadline counted from now. */
static void move_to(srv *s, srv_conn *c, int list)
{
    unlink_list(s, c);
    if (c->shut || c->fd < 0 || list < 0) return; /* without a descriptor: never timed out, never chosen */
    conn_q *q = &s->lists[list];
    c->since = srv_now();
    c->list = list;
    c->prev = q->tail;
    if (q->tail) q->tail->next = c;
    else q->head = c;
    q->tail = c;
}

/* Shuts c's socket down (with cmu held); libmicrohttpd closes the connection at its next read. */
static void shut(srv *s, srv_conn *c, int why)
{
    if (c->shut) return;
    unlink_list(s, c);
    c->shut = 1;
    s->nshut++;
    shutdown(c->fd, SHUT_RDWR);
    s->closed[why]++;
}

static int same_addr(const srv_conn *a, const srv_conn *b)
{
    return a->family == b->family && memcmp(a->addr, b->addr, sizeof a->addr) == 0;
}

/* A connection younger than this is chosen to make room only where no older one can be: two
 * connections of one address accepted together (an attacker's reopened one and a well-behaved
 * client's, taken in either order by the server's threads) must not push the well-behaved one out
 * before its request line, which it sends at once, has been read. */
#define CONN_GRACE_S 0.1

/* The oldest connection without a whole request, idle ones first, those older than
 * CONN_GRACE_S before younger ones: of c's address when per_ip is set, else of any; not c itself.
 * NULL when every one has a request being answered. */
static srv_conn *victim(srv *s, const srv_conn *c, int per_ip)
{
    static const int order[] = {CONN_IDLE, CONN_READING};
    const double now = srv_now();
    for (int young = 0; young < 2; young++)
        for (int i = 0; i < 2; i++)
            for (srv_conn *v = s->lists[order[i]].head; v; v = v->next)
                if (v != c && (!per_ip || same_addr(v, c)) && (young || now - v->opened >= CONN_GRACE_S)) return v;
    return NULL;
}

/* A new connection: counted, and room made for it where it takes a count past its limit. */
static void conn_started(srv *s, struct MHD_Connection *mc, void **ctx)
{
    srv_conn *c = calloc(1, sizeof *c);
    /* each answer is read before the next question: libmicrohttpd 1.0 answers them all in one union
     * of the connection's, so a second call overwrites the first's value (0.9 kept them apart) */
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = info ? (int)info->connect_fd : -1;
    info = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    *ctx = c;
    if (!c) return; /* out of memory: the connection goes untracked, under libmicrohttpd's limits alone */
    c->list = -1;
    c->fd = fd;
    c->opened = srv_now();
    if (sa && sa->sa_family == AF_INET) {
        c->family = AF_INET;
        memcpy(c->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        c->family = AF_INET6;
        memcpy(c->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
    }
    pthread_mutex_lock(&s->cmu);
    c->all_next = s->all;
    if (s->all) s->all->all_prev = c;
    s->all = c;
    s->nconns++;
    move_to(s, c, CONN_IDLE);
    size_t same = 0;
    for (const srv_conn *o = s->all; o; o = o->all_next) same += !o->shut && same_addr(o, c);
    size_t open = s->nconns - s->nshut;
    if (same > s->o.max_conns_per_ip) {
        srv_conn *v = victim(s, c, 1);
        if (v) {
            shut(s, v, CLOSED_ROOM);
            open--;
        } else {
            c->over = OVER_IP;
        }
    }
    if (!c->over && open > s->o.max_conns) {
        srv_conn *v = victim(s, c, 0);
        if (v) shut(s, v, CLOSED_ROOM);
        else
            c->over = OVER_ALL;
    }
    c->over_count = c->over == OVER_IP ? same : open;
    pthread_mutex_unlock(&s->cmu);
}

static void conn_closed(srv *s, void **ctx)
{
    srv_conn *c = *ctx;
    *ctx = NULL;
    if (!c) return;
    pthread_mutex_lock(&s->cmu);
    unlink_list(s, c);
    if (c->all_prev) c->all_prev->all_next = c->all_next;
    else s->all = c->all_next;
    if (c->all_next) c->all_next->all_prev = c->all_prev;
    s->nconns--;
    if (c->shut) s->nshut--;
    pthread_cond_broadcast(&s->cwake);
    pthread_mutex_unlock(&s->cmu);
    free(c);
}

void conn_notify(void *cls, struct MHD_Connection *mc, void **ctx, enum MHD_ConnectionNotificationCode code)
{
    if (code == MHD_CONNECTION_NOTIFY_STARTED) conn_started(cls, mc, ctx);
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED) conn_closed(cls, ctx);
}

srv_conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

void *conn_request_line(void *cls, const char *uri, struct MHD_Connection *mc)
{
    srv *s = cls;
    srv_conn *c = conn_of(mc);
    (void)uri;
    if (c) {
        pthread_mutex_lock(&s->cmu);
        c->begun = 1;
        move_to(s, c, CONN_READING);
        pthread_mutex_unlock(&s->cmu);
    }
    return NULL; /* the access handler's first call still sees no request of ours */
}

void conn_phase(srv *s, srv_conn *c, int list)
{
    if (!c) return;
    pthread_mutex_lock(&s->cmu);
    if (list == CONN_IDLE) c->begun = 0;
    move_to(s, c, list);
    if (list == CONN_IDLE && s->draining) pthread_cond_broadcast(&s->cwake);
    pthread_mutex_unlock(&s->cmu);
}

size_t conn_count(srv *s)
{
    pthread_mutex_lock(&s->cmu);
    size_t n = s->nconns - s->nshut;
    pthread_mutex_unlock(&s->cmu);
    return n;
}

void conn_closed_counts(srv *s, uint64_t out[NUM_CLOSED])
{
    pthread_mutex_lock(&s->cmu);
    memcpy(out, s->closed, sizeof s->closed);
    pthread_mutex_unlock(&s->cmu);
}

/* Waits on cwake (cmu held) until the monotonic time t. */
static void wait_till(srv *s, double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    if (ts.tv_nsec < 0) ts.tv_nsec = 0;
    pthread_cond_timedwait(&s->cwake, &s->cmu, &ts);
}

/* Shuts down every connection past its list's deadline (cmu held); returns the next deadline. */
static double expire(srv *s, double now)
{
    static const int why[NUM_LISTS] = {CLOSED_IDLE, CLOSED_REQUEST, CLOSED_ANSWER};
    double next = now + 0.25; /* a connection added to an empty list is looked at this late at most */
    for (int l = 0; l < NUM_LISTS; l++) {
        double t = list_timeout(s, l);
        srv_conn *c;
        while ((c = s->lists[l].head) && c->since + t <= now)
            shut(s, c, why[l]);
        if (c && c->since + t < next) next = c->since + t;
    }
    return next;
}

void *watchdog_main(void *arg)
{
    srv *s = arg;
    pthread_mutex_lock(&s->cmu);
    while (!s->watch_stop) wait_till(s, expire(s, srv_now()));
    pthread_mutex_unlock(&s->cmu);
    return NULL;
}

int conns_drain(srv *s, double deadline)
{
    pthread_mutex_lock(&s->cmu);
    s->draining = 1;
    for (;;) {
        double now = srv_now(), next = deadline;
        for (srv_conn *c = s->lists[CONN_IDLE].head, *n; c; c = n) {
            n = c->next;
            int bytes = 0; /* bytes waiting in the socket: a request on its way, to be answered */
            if (ioctl(c->fd, FIONREAD, &bytes) == 0 && bytes > 0) next = now + 0.01 < next ? now + 0.01 : next;
            else if (now - c->since >= IDLE_GRACE_S) shut(s, c, CLOSED_STOP);
            else if (c->since + IDLE_GRACE_S < next) next = c->since + IDLE_GRACE_S;
        }
        if (s->nconns == 0 || now >= deadline) break;
        wait_till(s, next);
    }
    int left = (int)s->nconns;
    pthread_mutex_unlock(&s->cmu);
    return left;
}
