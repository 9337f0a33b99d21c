/*
 * awscreds.h - the AWS default credential chain (objstore layer), for
 * Spice's `s3_auth: iam_role`.
 *
 * Links, in the order the AWS SDKs try them; the first that is configured
 * answers (a configured link that fails is an error, the chain does not
 * move past it):
 *   1. environment     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
 *   2. shared files    AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) then
 *                      AWS_CONFIG_FILE (~/.aws/config), profile AWS_PROFILE
 *                      (default "default"); aws_access_key_id,
 *                      aws_secret_access_key, aws_session_token. A profile
 *                      that needs role_arn, credential_process or sso_* is
 *                      refused naming the key; a named AWS_PROFILE that is in
 *                      neither file is an error
 *   3. web identity    AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 *                      (AWS_ROLE_SESSION_NAME): STS AssumeRoleWithWebIdentity
 *                      at AWS_ENDPOINT_URL_STS, else https://sts.REGION.amazonaws.com
 *   4. container       AWS_CONTAINER_CREDENTIALS_FULL_URI, or
 *                      http://169.254.170.2 + AWS_CONTAINER_CREDENTIALS_RELATIVE_URI;
 *                      Authorization from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
 *                      or AWS_CONTAINER_AUTHORIZATION_TOKEN. A plain-http
 *                      FULL_URI must be loopback or the ECS/EKS link-local hosts
 *   5. IMDSv2          AWS_EC2_METADATA_SERVICE_ENDPOINT (http://169.254.169.254):
 *                      PUT /latest/api/token, then the role under
 *                      /latest/meta-data/iam/security-credentials/; skipped when
 *                      AWS_EC2_METADATA_DISABLED=true. Unreachable (1 s) ends
 *                      the chain: "no AWS credentials found", naming each link
 *
 * Responses are capped (64 KiB) and every field is length-checked.
 */
#ifndef TM_OBJSTORE_AWSCREDS_H
#define TM_OBJSTORE_AWSCREDS_H

#include <stdint.h>

#include "util/error.h"

typedef struct tm_aws_creds {
  char access_key[256];
  char secret_key[256];
  char session_token[4096]; /* "" when none */
  int64_t expires_ms;       /* Unix ms; 0: does not expire */
  char source[64];          /* which link answered: "environment", "profile default", … */
} tm_aws_creds;

/** One walk of the chain (no cache). *out is filled on TM_OK and wiped otherwise. */
int tm_aws_creds_resolve(tm_aws_creds *out, tm_error *err) TM_WARN_UNUSED;

/**
 * A cached chain shared by the requests of one store: thread-safe. Keys are
 * fetched on first use and again 5 minutes before they expire; if renewing
 * fails while the old keys are still valid, the old keys are used.
 */
typedef struct tm_aws_chain tm_aws_chain;

int tm_aws_chain_new(tm_aws_chain **out, tm_error *err) TM_WARN_UNUSED;
/** Copies the current keys into *out (resolving them when needed). */
int tm_aws_chain_get(tm_aws_chain *c, tm_aws_creds *out, tm_error *err) TM_WARN_UNUSED;
/** Frees c (NULL is fine); wipes the cached keys. */
void tm_aws_chain_free(tm_aws_chain *c);

#endif
