/* The client of the upstream HTTP client (uhttp.h) as its two halves share it: uhttp_cfg.c
 * builds it from the configuration before the jail, uhttp.c's connections use it. For those
 * two files only; uhttp.h is the contract. */
#ifndef ASSENT_UHTTP_INT_H
#define ASSENT_UHTTP_INT_H

#include <stddef.h>
#include <stdint.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "gateway/worker/upstream/uhttp.h"

struct uhttp {
	int tls;
	char *host, *path, *ca_name, *hostport;
	uint16_t port;
	struct buf fixed; /* the request headers that never change, credentials included: wiped */
	size_t body_max, stream_max;
	int any_body, raw;
	char session[UHTTP_SESSION_MAX + 1];
	char protocol[UHTTP_PROTOCOL_MAX + 1];
	size_t nconns, nca;
	mbedtls_x509_crt ca;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_ssl_config conf;
	/* The last TLS session a handshake made, offered again by the next connection
	 * (resumption: no certificate or key exchange on a new fd; about 9 ms become ~1). */
	mbedtls_ssl_session resume;
	int have_resume;
	/* host as an IP address (4 or 16 bytes; 0: a name): mbedTLS 2.28 matches names only
	 * (CN, dNSName), so an address is checked against the iPAddress entries here. */
	uint8_t ip[16];
	size_t iplen;
};

#endif
