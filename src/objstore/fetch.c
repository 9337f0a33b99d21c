/*
 * fetch.c - one small HTTP request over libcurl (objstore layer). See
 * fetch.h.
 */
#include "objstore/fetch.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_rc = CURLE_OK;
static void curl_init_once(void) { g_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

typedef struct sink {
  tm_buf *body;
  bool over; /* the body passed its limit */
} sink;

static size_t on_body(char *data, size_t size, size_t n, void *payload) {
  sink *s = payload;
  size_t len = size * n;
  if (tm_buf_append(s->body, data, len, NULL) < 0) {
    s->over = true;
    return 0; /* abort the transfer */
  }
  return len;
}

int tm_fetch(const tm_fetch_req *r, long *status, tm_buf *body, tm_error *err) {
  *status = 0;
  pthread_once(&g_curl_once, curl_init_once);
  if (g_curl_rc != CURLE_OK)
    return tm_error_set(err, TM_EIO, "libcurl: %s", curl_easy_strerror(g_curl_rc));
  CURL *c = curl_easy_init();
  if (!c) return tm_error_nomem(err);
  struct curl_slist *hdr = NULL;
  int rc = TM_OK;
  for (size_t i = 0; r->headers && r->headers[i]; i++) {
    struct curl_slist *next = curl_slist_append(hdr, r->headers[i]);
    if (!next) {
      rc = tm_error_nomem(err);
      goto done;
    }
    hdr = next;
  }
  if (r->body) {
    struct curl_slist *next = curl_slist_append(hdr, "Expect:");
    if (!next) {
      rc = tm_error_nomem(err);
      goto done;
    }
    hdr = next;
  }
  long timeout = r->timeout_ms > 0 ? r->timeout_ms : 30000;
  long connect = r->connect_timeout_ms > 0 ? r->connect_timeout_ms
                                           : (timeout < 10000 ? timeout : 10000);
  sink s = {body, false};
  curl_easy_setopt(c, CURLOPT_URL, r->url);
  if (r->body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
  }
  if (r->method && strcmp(r->method, "GET") == 0 && !r->body)
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  else if (r->method && strcmp(r->method, "POST") != 0)
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  CURLcode cc = curl_easy_perform(c);
  if (cc == CURLE_WRITE_ERROR && s.over) {
    rc = tm_error_set(err, TM_ETOOLARGE, "%s: response larger than %zu bytes", r->url,
                      body->limit);
  } else if (cc == CURLE_OUT_OF_MEMORY) {
    rc = tm_error_nomem(err);
  } else if (cc != CURLE_OK) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "%s: %s", r->url, curl_easy_strerror(cc));
  } else {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  }
done:
  curl_slist_free_all(hdr);
  curl_easy_cleanup(c);
  return rc;
}
