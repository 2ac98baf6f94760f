/* The client half of the upstream HTTP client (uhttp.h), made once before the jail: the
 * configuration checked, the request lines that never change, the trusted CAs read whole,
 * and the TLS configuration (mbedTLS 2.28: TLS 1.2, verify required, ALPN http/1.1, an
 * address checked against the certificate's iPAddress names). uhttp.c drives connections. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <mbedtls/asn1.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>

#include "gateway/worker/upstream/uhttp_int.h"

/* The tokens of RFC 9110 section 5.6.2, for header names and the protocol version. */
static int token_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      strchr("!#$%&'*+-.^_`|~", c)))
			return 0;
	}
	return 1;
}

/* Headers uhttp writes itself (or that would change the framing): a configuration may
 * not set them. */
static int header_reserved(const char *name)
{
	static const char *const names[] = {
	    "host",    "content-length", "transfer-encoding",	 "connection",	    "content-type",
	    "accept",  "mcp-session-id", "mcp-protocol-version", "upgrade",	    "te",
	    "trailer", "expect",	 "keep-alive",		 "proxy-connection"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcasecmp(name, names[i]) == 0)
			return 1;
	return 0;
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static int cfg_check(const struct uhttp_cfg *cfg, char *err)
{
	if (!cfg->scheme || (strcmp(cfg->scheme, "https") && strcmp(cfg->scheme, "http")))
		return as_fail(err, AS_EINVAL, "uhttp: scheme must be https or http");
	if (!cfg->host || !cfg->host[0] || strlen(cfg->host) > 255)
		return as_fail(err, AS_EINVAL, "uhttp: host must be 1 to 255 bytes");
	for (const char *p = cfg->host; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f || strchr("/?#@[]", *p))
			return as_fail(err, AS_EINVAL, "uhttp: host has a byte not allowed in a host name");
	if (cfg->port == 0)
		return as_fail(err, AS_EINVAL, "uhttp: port 0");
	if (!cfg->path || cfg->path[0] != '/' || strlen(cfg->path) > 4096)
		return as_fail(err, AS_EINVAL, "uhttp: path must start with '/' (at most 4096 bytes)");
	for (const char *p = cfg->path; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return as_fail(err, AS_EINVAL, "uhttp: path has a space, control or non-ASCII byte");
	if (cfg->nheaders > UHTTP_CFG_HEADERS_MAX)
		return as_fail(err, AS_ETOOBIG, "uhttp: more than %d headers", UHTTP_CFG_HEADERS_MAX);
	for (size_t i = 0; i < cfg->nheaders; i++) {
		const struct uhttp_header *h = &cfg->headers[i];
		if (!h->name || !token_ok(h->name, 256))
			return as_fail(err, AS_EINVAL, "uhttp: header %zu has no valid name", i + 1);
		if (header_reserved(h->name))
			return as_fail(err, AS_EINVAL, "uhttp: header '%s' is set by assent itself", h->name);
		if (!h->value || strlen(h->value) > 8192)
			return as_fail(err, AS_EINVAL, "uhttp: the value of header '%s' is missing or over 8192 bytes",
				       h->name);
		/* The value is a credential: say what is wrong with it, never what it is. */
		for (const char *p = h->value; *p; p++)
			if ((unsigned char)*p < 0x20 && *p != '\t')
				return as_fail(err, AS_EINVAL, "uhttp: the value of header '%s' has a control byte",
					       h->name);
	}
	if (strcmp(cfg->scheme, "http") == 0 && cfg->ca)
		return as_fail(err, AS_EINVAL, "uhttp: a CA file for a plain http upstream");
	return 0;
}

/* The CA file, read whole (bounded) into memory and parsed: nothing is opened later. */
static int load_ca(struct uhttp *u, const char *path, char *err)
{
	struct buf b;
	char why[AS_ERRLEN];
	buf_init(&b, UHTTP_CA_FILE_MAX + 1);
	if (file_read(path, UHTTP_CA_FILE_MAX, &b, why) != 0) {
		buf_free(&b);
		return as_fail(err, AS_EIO, "uhttp: CA file: %s", why);
	}
	if (buf_putc(&b, 0) != 0) { /* mbedTLS wants PEM NUL-terminated, the NUL counted */
		buf_free(&b);
		return as_fail(err, AS_ENOMEM, "uhttp: out of memory for the CA file");
	}
	int rc = mbedtls_x509_crt_parse(&u->ca, b.p, b.len);
	buf_free(&b);
	for (const mbedtls_x509_crt *c = &u->ca; c && c->raw.len; c = c->next)
		u->nca++;
	/* rc > 0: that many certificates of a bundle could not be parsed; the others count. */
	if (rc < 0 || u->nca == 0) {
		char e[128];
		mbedtls_strerror(rc, e, sizeof e);
		return as_fail(err, AS_ECRYPTO, "uhttp: CA file %s: no certificate could be read (%s)", path, e);
	}
	return 0;
}

/* The lines every request carries, built once: Host and the configuration's headers. */
static int build_fixed(struct uhttp *u, const struct uhttp_cfg *cfg)
{
	/* All of it reserved first: a buffer that grew by realloc would leave a copy of the
	 * credentials behind in freed memory, unwiped. */
	size_t need = strlen(u->hostport) + 9;
	for (size_t i = 0; i < cfg->nheaders; i++)
		need += strlen(cfg->headers[i].name) + strlen(cfg->headers[i].value) + 4;
	GUARD(buf_reserve(&u->fixed, need + 1));
	GUARD(buf_printf(&u->fixed, "Host: %s\r\n", u->hostport));
	for (size_t i = 0; i < cfg->nheaders; i++)
		GUARD(buf_printf(&u->fixed, "%s: %s\r\n", cfg->headers[i].name, cfg->headers[i].value));
	return 0;
}

/* 1 when the certificate's subjectAltName holds an iPAddress equal to ip. The DER is
 * the one mbedTLS parsed already; every length is checked by the asn1 reader. */
static int san_has_ip(const mbedtls_x509_crt *crt, const uint8_t *ip, size_t iplen)
{
	unsigned char *p = crt->v3_ext.p, *end;
	size_t len;
	if (!p) /* a certificate without extensions (v1) */
		return 0;
	end = p + crt->v3_ext.len;
	if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0)
		return 0;
	end = p + len;
	while (p < end) {
		unsigned char *ext_end;
		mbedtls_x509_buf oid;
		int critical = 0;
		if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0)
			return 0;
		ext_end = p + len;
		if (mbedtls_asn1_get_tag(&p, ext_end, &oid.len, MBEDTLS_ASN1_OID) != 0)
			return 0;
		oid.p = p;
		p += oid.len;
		/* critical is optional: absent, the cursor stays where it was */
		int absent = mbedtls_asn1_get_bool(&p, ext_end, &critical);
		(void)absent;
		if (mbedtls_asn1_get_tag(&p, ext_end, &len, MBEDTLS_ASN1_OCTET_STRING) != 0)
			return 0;
		if (MBEDTLS_OID_CMP(MBEDTLS_OID_SUBJECT_ALT_NAME, &oid) != 0) {
			p = ext_end;
			continue;
		}
		unsigned char *q = p, *names_end;
		if (mbedtls_asn1_get_tag(&q, ext_end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0)
			return 0;
		names_end = q + len;
		while (q < names_end) {
			unsigned char tag = *q++;
			if (mbedtls_asn1_get_len(&q, names_end, &len) != 0)
				return 0;
			if (tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7) && len == iplen && memcmp(q, ip, len) == 0)
				return 1;
			q += len;
		}
		p = ext_end;
	}
	return 0;
}

int uhttp_der_has_ip(const uint8_t *der, size_t n, const uint8_t *ip, size_t iplen)
{
	mbedtls_x509_crt crt;
	mbedtls_x509_crt_init(&crt);
	int rc = mbedtls_x509_crt_parse_der(&crt, der, n);
	int has = rc == 0 && (iplen == 4 || iplen == 16) && san_has_ip(&crt, ip, iplen);
	mbedtls_x509_crt_free(&crt);
	return rc != 0 ? AS_EINVAL : has;
}

static int verify_ip(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
	const struct uhttp *u = ctx;
	if (depth == 0 && u->iplen && !san_has_ip(crt, u->ip, u->iplen))
		*flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
	return 0;
}

int uhttp_new(const struct uhttp_cfg *cfg, struct uhttp **out, char *err)
{
	static const char *alpn[] = {"http/1.1", NULL}; /* mbedTLS keeps the pointer */
	*out = NULL;
	GUARD(cfg_check(cfg, err));
	struct uhttp *u = calloc(1, sizeof *u);
	if (!u)
		return as_fail(err, AS_ENOMEM, "uhttp: out of memory");
	mbedtls_x509_crt_init(&u->ca);
	mbedtls_entropy_init(&u->entropy);
	mbedtls_ctr_drbg_init(&u->drbg);
	mbedtls_ssl_config_init(&u->conf);
	mbedtls_ssl_session_init(&u->resume);
	buf_init(&u->fixed, 1u << 20);
	u->tls = strcmp(cfg->scheme, "https") == 0;
	u->port = cfg->port;
	u->body_max = cfg->body_max ? cfg->body_max : UHTTP_BODY_MAX_DEFAULT;
	u->stream_max = cfg->stream_max;
	u->any_body = cfg->any_body;
	u->raw = cfg->raw;
	int deflt = u->port == (u->tls ? 443 : 80);
	int v6 = strchr(cfg->host, ':') != NULL;
	size_t hn = strlen(cfg->host) + 16;
	u->hostport = malloc(hn);
	u->host = dup_str(cfg->host);
	u->path = dup_str(cfg->path);
	u->ca_name = dup_str(cfg->ca ? cfg->ca : "the system store (" UHTTP_SYSTEM_CA ")");
	if (!u->hostport || !u->host || !u->path || !u->ca_name) {
		uhttp_free(u);
		return as_fail(err, AS_ENOMEM, "uhttp: out of memory");
	}
	if (deflt)
		snprintf(u->hostport, hn, "%s%s%s", v6 ? "[" : "", cfg->host, v6 ? "]" : "");
	else
		snprintf(u->hostport, hn, "%s%s%s:%u", v6 ? "[" : "", cfg->host, v6 ? "]" : "", (unsigned)u->port);
	if (build_fixed(u, cfg) != 0) {
		uhttp_free(u);
		return as_fail(err, AS_ENOMEM, "uhttp: out of memory for the request headers");
	}
	if (!u->tls) {
		*out = u;
		return 0;
	}
	int rc = load_ca(u, cfg->ca ? cfg->ca : UHTTP_SYSTEM_CA, err);
	static const unsigned char pers[] = "assent-uhttp";
	if (rc == 0 && mbedtls_ctr_drbg_seed(&u->drbg, mbedtls_entropy_func, &u->entropy, pers, sizeof pers - 1) != 0)
		rc = as_fail(err, AS_ECRYPTO, "uhttp: the random generator could not be seeded");
	if (rc == 0 && mbedtls_ssl_config_defaults(&u->conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
						   MBEDTLS_SSL_PRESET_DEFAULT) != 0)
		rc = as_fail(err, AS_ECRYPTO, "uhttp: TLS configuration failed");
	if (rc == 0) {
		/* TLS 1.2 at least; 1.2 at most too, since mbedTLS 2.28 has no TLS 1.3. */
		mbedtls_ssl_conf_min_version(&u->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
		mbedtls_ssl_conf_authmode(&u->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
		mbedtls_ssl_conf_ca_chain(&u->conf, &u->ca, NULL);
		mbedtls_ssl_conf_rng(&u->conf, mbedtls_ctr_drbg_random, &u->drbg);
		mbedtls_ssl_conf_renegotiation(&u->conf, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
		if (inet_pton(AF_INET, cfg->host, u->ip) == 1)
			u->iplen = 4;
		else if (inet_pton(AF_INET6, cfg->host, u->ip) == 1)
			u->iplen = 16;
		if (u->iplen) /* no SNI for an address (RFC 6066), no name check: verify_ip instead */
			mbedtls_ssl_conf_verify(&u->conf, verify_ip, u);
		if (mbedtls_ssl_conf_alpn_protocols(&u->conf, alpn) != 0)
			rc = as_fail(err, AS_ECRYPTO, "uhttp: TLS ALPN configuration failed");
	}
	if (rc != 0) {
		uhttp_free(u);
		return rc;
	}
	*out = u;
	return 0;
}

void uhttp_free(struct uhttp *u)
{
	if (!u)
		return;
	buf_free_wipe(&u->fixed);
	mbedtls_ssl_session_free(&u->resume); /* wipes its master secret */
	mbedtls_ssl_config_free(&u->conf);
	mbedtls_ctr_drbg_free(&u->drbg);
	mbedtls_entropy_free(&u->entropy);
	mbedtls_x509_crt_free(&u->ca);
	free(u->host);
	free(u->path);
	free(u->ca_name);
	free(u->hostport);
	explicit_bzero(u->session, sizeof u->session);
	free(u);
}

size_t uhttp_ca_count(const struct uhttp *u)
{
	return u->nca;
}

const char *uhttp_session_id(const struct uhttp *u)
{
	return u->session;
}

int uhttp_set_protocol(struct uhttp *u, const char *version, char *err)
{
	if (!version || !token_ok(version, UHTTP_PROTOCOL_MAX))
		return as_fail(err, AS_EINVAL, "uhttp: a protocol version must be a token of 1 to %d bytes",
			       UHTTP_PROTOCOL_MAX);
	snprintf(u->protocol, sizeof u->protocol, "%s", version);
	return 0;
}
