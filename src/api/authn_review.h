/* authn_review.h - the authentication endpoints that are not resources: flotilla.io's client
 * certificate signing (FL_X509_SIGN_PATH, authn_x509.h; what `flotilla ctl kubeconfig` calls,
 * authorized as "create clientcertificates.flotilla.io": system:masters), and
 * authentication.k8s.io/v1's create-only reviews:
 *   SelfSubjectReview (POST /apis/authentication.k8s.io/v1/selfsubjectreviews): who the caller
 *     is, as `kubectl auth whoami` prints it; every authenticated identity may ask, as
 *     kube-apiserver's system:basic-user role allows;
 *   TokenReview (POST /apis/authentication.k8s.io/v1/tokenreviews): who holds a bearer token
 *     (any kind this server accepts), for the audiences asked (default the API's); authorized
 *     as "create tokenreviews" (system:masters, or RBAC once it grants it).
 * Neither is stored. Called by fl_api_handle before the resource routing. Any thread. */
#ifndef FL_AUTHN_REVIEW_H
#define FL_AUTHN_REVIEW_H

#include <stdbool.h>

#include "api/api.h"

/* Is path one of the reviews or the signing endpoint? */
bool fl_authn_is_review_path(const char *path);
/* Serve r (its path one of the reviews) for api; api->auth is set. */
void fl_authn_review(fl_api *api, fl_req *r);

#endif
