/*
 * azure_params.c - an abfs:// URL's store from dataset params (objstore
 * layer, azure backend): Spice's abfs_* names (SPEC §4). Each documented
 * param is implemented (abfs_disable_tagging: true is what tidemark does, it
 * never tags blobs; false is refused), or refused with TM_EUNSUPPORTED naming it; an
 * unknown abfs_* name is TM_EINVALID, so that a typo is not ignored.
 */
#include <stdlib.h>
#include <string.h>

#include "objstore/azure/azure_int.h"
#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

static const char *const k_known[] = {
    "abfs_account",          "abfs_access_key",   "abfs_sas_string",
    "abfs_endpoint",         "abfs_use_emulator", "abfs_skip_signature",
    "abfs_bearer_token",
    "abfs_max_retries",      "abfs_retry_timeout", "abfs_backoff_initial_duration",
    "abfs_backoff_max_duration", "abfs_backoff_base", "abfs_disable_tagging"};

/* Documented by Spice, not implemented: OAuth flows tidemark does not run, proxies. */
static const char *const k_unsupported[] = {
    "abfs_client_secret", "abfs_authority_host",       "abfs_msi_endpoint",
    "abfs_federated_token_file", "abfs_use_cli",       "abfs_proxy_url",
    "abfs_proxy_ca_certificate", "abfs_proxy_exludes", "abfs_proxy_excludes",
    "abfs_use_fabric_endpoint", "abfs_client_id", "abfs_tenant_id"};

static bool in(const char *k, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(k, list[i]) == 0) return true;
  return false;
}

static const char *param(const tm_kv *params, const char *name) {
  const char *v = params ? tm_kv_get(params, name) : NULL;
  return v && *v ? v : NULL;
}

static int param_duration(const tm_kv *params, const char *name, int64_t *out, tm_error *err) {
  const char *v = param(params, name);
  if (!v) return TM_OK;
  int64_t ms = 0;
  if (tm_duration_parse(v, &ms, err) < 0 || ms < 0)
    return tm_error_set(err, TM_EINVALID, "param %s: '%s' is not a duration (5s, 1m, 500ms)",
                        name, v);
  *out = ms;
  return TM_OK;
}

/*
 * The account of "ACCOUNT.dfs.SUFFIX" or "ACCOUNT.blob.SUFFIX" (the host
 * of abfs://CONTAINER@HOST/), and the SUFFIX ("core.windows.net"). Both:
 * tm_free.
 */
static int split_host(const char *host, char **account_out, char **suffix_out, tm_error *err) {
  const char *dot = strchr(host, '.');
  const char *suffix = NULL;
  if (dot && strncmp(dot, ".dfs.", 5) == 0) suffix = dot + 5;
  else if (dot && strncmp(dot, ".blob.", 6) == 0) suffix = dot + 6;
  if (!suffix || !*suffix || dot == host)
    return tm_error_set(err, TM_EINVALID,
                        "abfs URL host '%s' is not ACCOUNT.dfs.core.windows.net (or "
                        "ACCOUNT.blob.core.windows.net)",
                        host);
  for (const char *p = suffix; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
      return tm_error_set(err, TM_EINVALID, "abfs URL host '%s' has a '%c'", host, c);
  }
  char *account = tm_strndup(host, (size_t)(dot - host));
  char *sfx = tm_strdup(suffix);
  if (!account || !sfx) {
    tm_free(account);
    tm_free(sfx);
    return tm_error_nomem(err);
  }
  *account_out = account;
  *suffix_out = sfx;
  return TM_OK;
}

int tm_objstore_azure_new_from_params(tm_objstore **out, const char *container,
                                      const char *host, const tm_kv *params, tm_error *err) {
  for (size_t i = 0; params && i < params->len; i++) {
    const char *k = params->items[i].key;
    if (strncmp(k, "abfs_", 5) != 0) continue;
    if (in(k, k_unsupported, sizeof k_unsupported / sizeof k_unsupported[0]))
      return tm_error_set(err, TM_EUNSUPPORTED,
                          "param %s is not supported: tidemark authenticates to Azure with "
                          "abfs_access_key, abfs_sas_string or abfs_bearer_token (or "
                          "anonymously), directly, without a proxy",
                          k);
    if (!in(k, k_known, sizeof k_known / sizeof k_known[0]))
      return tm_error_set(err, TM_EINVALID,
                          "unknown param '%s' (abfs params: abfs_account, abfs_access_key, "
                          "abfs_sas_string, abfs_bearer_token, abfs_skip_signature, "
                          "abfs_endpoint, abfs_use_emulator, abfs_max_retries, "
                          "abfs_retry_timeout, abfs_backoff_initial_duration, "
                          "abfs_backoff_max_duration, abfs_backoff_base, allow_http)",
                          k);
  }
  tm_azure_options o;
  tm_azure_options_init(&o);
  o.container = container;
  o.account = param(params, "abfs_account");
  o.access_key = param(params, "abfs_access_key");
  o.sas = param(params, "abfs_sas_string");
  o.bearer_token = param(params, "abfs_bearer_token");
  o.endpoint = param(params, "abfs_endpoint");
  bool emulator = false, skip_signature = false, tagging_off = false;
  const char *v;
  if ((v = param(params, "allow_http")) != NULL)
    TM_TRY(tm_objstore__param_bool("allow_http", v, &o.allow_http, err));
  if ((v = param(params, "abfs_use_emulator")) != NULL)
    TM_TRY(tm_objstore__param_bool("abfs_use_emulator", v, &emulator, err));
  if ((v = param(params, "abfs_skip_signature")) != NULL)
    TM_TRY(tm_objstore__param_bool("abfs_skip_signature", v, &skip_signature, err));
  /* tidemark writes no blob tags: disabling them is what it does; asking for them is refused. */
  if ((v = param(params, "abfs_disable_tagging")) != NULL) {
    TM_TRY(tm_objstore__param_bool("abfs_disable_tagging", v, &tagging_off, err));
    if (!tagging_off)
      return tm_error_set(err, TM_EUNSUPPORTED,
                          "param abfs_disable_tagging: false is not supported (tidemark writes no "
                          "blob tags)");
  }
  if ((v = param(params, "abfs_max_retries")) != NULL) {
    int64_t n = 0;
    if (tm_parse_int64(v, strlen(v), &n) != TM_OK || n < 0 || n > 100)
      return tm_error_set(err, TM_EINVALID, "param abfs_max_retries: '%s' is not 0..100", v);
    o.max_retries = (int)n;
  }
  TM_TRY(param_duration(params, "abfs_retry_timeout", &o.retry_timeout_ms, err));
  TM_TRY(param_duration(params, "abfs_backoff_initial_duration", &o.retry_base_ms, err));
  TM_TRY(param_duration(params, "abfs_backoff_max_duration", &o.retry_max_ms, err));
  if (o.retry_max_ms < o.retry_base_ms) o.retry_max_ms = o.retry_base_ms;
  if ((v = param(params, "abfs_backoff_base")) != NULL) {
    if (tm_parse_double(v, strlen(v), &o.backoff_factor) != TM_OK || !(o.backoff_factor >= 1.0) ||
        o.backoff_factor > 100.0)
      return tm_error_set(err, TM_EINVALID,
                          "param abfs_backoff_base: '%s' is not a factor from 1 to 100 (each "
                          "backoff is the previous one times it)",
                          v);
  }
  if (skip_signature && (o.access_key || o.sas || o.bearer_token))
    return tm_error_set(err, TM_EINVALID,
                        "abfs_skip_signature cannot go with abfs_access_key, abfs_sas_string or "
                        "abfs_bearer_token");
  char *host_account = NULL, *suffix = NULL, *endpoint = NULL;
  int rc = TM_OK;
  if (host) {
    TM_TRY(split_host(host, &host_account, &suffix, err));
    if (o.account && strcmp(o.account, host_account) != 0) {
      rc = tm_error_set(err, TM_EINVALID,
                        "abfs_account '%s' is not the URL's account '%s'", o.account,
                        host_account);
      goto done;
    }
    o.account = host_account;
    o.endpoint_suffix = suffix;
  }
  if (emulator) {
    /* Azurite: path-style EMULATOR/ACCOUNT, the well-known account and key, http allowed. */
    if (!o.account) o.account = TM_AZURE_EMULATOR_ACCOUNT;
    if (!o.access_key && !o.sas && !o.bearer_token && !skip_signature)
      o.access_key = TM_AZURE_EMULATOR_KEY;
    const char *base = o.endpoint ? o.endpoint : getenv("AZURITE_BLOB_STORAGE_URL");
    if (!base || !*base) base = TM_AZURE_EMULATOR_URL;
    size_t bl = strlen(base), al = strlen(o.account);
    while (bl > 0 && base[bl - 1] == '/') bl--;
    bool has_account = bl > al && base[bl - al - 1] == '/' && !strncmp(base + bl - al, o.account, al);
    endpoint = has_account ? tm_strndup(base, bl) : tm_asprintf("%.*s/%s", (int)bl, base, o.account);
    if (!endpoint) {
      rc = tm_error_nomem(err);
      goto done;
    }
    o.endpoint = endpoint;
    o.allow_http = true;
  }
  rc = tm_objstore_azure_new(out, &o, err);
done:
  tm_free(host_account);
  tm_free(suffix);
  tm_free(endpoint);
  return rc;
}
