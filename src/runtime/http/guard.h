/*
 * guard.h - connection hygiene for the HTTP server (runtime layer, private
 * to runtime/http; SPEC D4, C1; docs/RELIABILITY.md "Hostile clients").
 *
 * libmicrohttpd's own timeout is an idle timeout that every byte resets, so
 * a client that sends one header byte every few seconds (slowloris) holds
 * its connection for ever, and enough of them fill the connection limit.
 * The guard keeps a list of the open connections and
 *   - gives each request a deadline: its head and body must have arrived
 *     within request_timeout_ms of the connection opening (or of the
 *     previous response on a kept-alive connection); past it the socket is
 *     shut down, which makes libmicrohttpd close the connection;
 *   - keeps room for new clients (health probes): when a connection opens
 *     while `soft_cap` or more are open, the connection that has waited
 *     longest for its request to arrive is cut at once, if it has waited
 *     more than a second (so that the cuts cannot churn faster than the
 *     slots turn over, and a client that just connected is not cut).
 * The per-client limit is libmicrohttpd's (MHD_OPTION_PER_IP_CONNECTION_LIMIT).
 *
 * Shutting a socket down from the guard's thread is safe: libmicrohttpd
 * reports a connection closed (MHD_CONNECTION_NOTIFY_CLOSED, which removes
 * it here under the guard's lock) before it closes the descriptor.
 */
#ifndef TM_RUNTIME_HTTP_GUARD_H
#define TM_RUNTIME_HTTP_GUARD_H

#include <microhttpd.h>
#include <stdint.h>

#include "util/error.h"

typedef struct tm_http_guard tm_http_guard;

/** Starts the guard's thread. name is for logs (copied). */
int tm_http_guard_new(tm_http_guard **out, const char *name, unsigned soft_cap,
                      int64_t request_timeout_ms, tm_error *err) TM_WARN_UNUSED;
/** Stops the thread and frees; call after the daemon stopped. NULL is a no-op. */
void tm_http_guard_free(tm_http_guard *g);

/** MHD_OPTION_NOTIFY_CONNECTION callback; cls is the guard. */
void tm_http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code);
/** The whole request (head and body) arrived: the deadline no longer applies. */
void tm_http_guard_request_in(tm_http_guard *g, struct MHD_Connection *conn);
/** The response was sent: the next request on the connection gets a new deadline. */
void tm_http_guard_request_done(tm_http_guard *g, struct MHD_Connection *conn);
/** Connections cut so far (deadline or room), for tests and logs. */
uint64_t tm_http_guard_cut_count(tm_http_guard *g);

#endif
