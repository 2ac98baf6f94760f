/* PKCS#11 signing keys (see p11.h): the module through its standard function list,
 * one logged-in session per process, ECDSA P-256 keys found by label. The private key
 * stays in the token; what comes back from the module is parsed here with bounds. */
#define _GNU_SOURCE
#include "common/p11.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/sha256.h>
#include <p11-kit/pkcs11.h>

#include "common/util.h"

struct p11 {
	void *dl;
	CK_FUNCTION_LIST_PTR f;
	CK_SESSION_HANDLE s;
	int initialized, session, logged_in;
	pid_t pid;	      /* the process that opened the session: a forked child never uses it */
	pthread_mutex_t lock; /* C_SignInit and C_Sign are one operation on the one session */
	char token[P11_TOKEN_MAX + 1];
};

struct p11_key {
	struct p11 *p;
	CK_OBJECT_HANDLE priv;
	struct eckey *pub;
	char label[P11_LABEL_MAX + 1];
};

/* ---- configuration ---- */

static int env_copy(const char *name, const char *def, char *out, size_t n, char *err)
{
	const char *v = getenv(name);
	if (!v || !*v)
		v = def;
	if (!v || !*v)
		return as_fail(err, AS_EINVAL, "ASSENT_PKCS11_MODULE is set: %s must be set too", name);
	if (strlen(v) >= n)
		return as_fail(err, AS_EINVAL, "%s is %zu bytes, over the maximum of %zu", name, strlen(v), n - 1);
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return as_fail(err, AS_EINVAL, "%s holds a control character", name);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

int p11_config_from_env(struct p11_config *c, char *err)
{
	memset(c, 0, sizeof *c);
	const char *m = getenv("ASSENT_PKCS11_MODULE");
	if (!m || !*m)
		return 0;
	if (m[0] != '/')
		return as_fail(err, AS_EINVAL, "ASSENT_PKCS11_MODULE must be an absolute path, not '%.64s'", m);
	GUARD(env_copy("ASSENT_PKCS11_MODULE", NULL, c->module, sizeof c->module, err));
	GUARD(env_copy("ASSENT_PKCS11_TOKEN", NULL, c->token, sizeof c->token, err));
	GUARD(env_copy("ASSENT_PKCS11_PIN_FILE", NULL, c->pin_file, sizeof c->pin_file, err));
	GUARD(env_copy("ASSENT_PKCS11_TOKEN_KEY", P11_TOKEN_KEY_DEFAULT, c->token_key, sizeof c->token_key, err));
	GUARD(env_copy("ASSENT_PKCS11_CHECKPOINT_KEY", P11_CKPT_KEY_DEFAULT, c->ckpt_key, sizeof c->ckpt_key, err));
	if (!strcmp(c->token_key, c->ckpt_key))
		return as_fail(err, AS_EINVAL,
			       "the token key and the checkpoint key must have two labels, not both '%s'",
			       c->token_key);
	c->on = 1;
	return 0;
}

/* The user PIN: one line of a file only its owner may read (like a private key file). */
static int pin_read(const char *path, char *pin, size_t *n, char *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return as_fail(err, AS_EIO, "ASSENT_PKCS11_PIN_FILE %s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return as_fail(err, AS_EINVAL, "ASSENT_PKCS11_PIN_FILE %s is not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return as_fail(err, AS_EINVAL,
			       "ASSENT_PKCS11_PIN_FILE %s has mode %04o: the group and others must have no access "
			       "(chmod 600)",
			       path, (unsigned)(st.st_mode & 07777));
	}
	ssize_t r = read(fd, pin, P11_PIN_MAX + 2);
	close(fd);
	if (r < 0)
		return as_fail(err, AS_EIO, "ASSENT_PKCS11_PIN_FILE %s: %s", path, strerror(errno));
	size_t len = (size_t)r;
	while (len > 0 && (pin[len - 1] == '\n' || pin[len - 1] == '\r'))
		len--;
	if (len == 0 || len > P11_PIN_MAX || memchr(pin, '\n', len)) {
		explicit_bzero(pin, P11_PIN_MAX + 2);
		return as_fail(err, AS_EINVAL, "ASSENT_PKCS11_PIN_FILE %s must hold one line of 1 to %d bytes", path,
			       P11_PIN_MAX);
	}
	*n = len;
	return 0;
}

/* ---- the module, the token, the session ---- */

static const char *ckr_name(CK_RV rv)
{
	switch (rv) {
	case CKR_PIN_INCORRECT:
		return "CKR_PIN_INCORRECT";
	case CKR_PIN_LOCKED:
		return "CKR_PIN_LOCKED";
	case CKR_PIN_EXPIRED:
		return "CKR_PIN_EXPIRED";
	case CKR_USER_PIN_NOT_INITIALIZED:
		return "CKR_USER_PIN_NOT_INITIALIZED";
	case CKR_TOKEN_NOT_PRESENT:
		return "CKR_TOKEN_NOT_PRESENT";
	case CKR_MECHANISM_INVALID:
		return "CKR_MECHANISM_INVALID";
	case CKR_KEY_TYPE_INCONSISTENT:
		return "CKR_KEY_TYPE_INCONSISTENT";
	case CKR_ARGUMENTS_BAD:
		return "CKR_ARGUMENTS_BAD";
	case CKR_DEVICE_ERROR:
		return "CKR_DEVICE_ERROR";
	case CKR_GENERAL_ERROR:
		return "CKR_GENERAL_ERROR";
	default:
		return "a PKCS#11 error";
	}
}

static int rv_fail(char *err, CK_RV rv, const char *what)
{
	return as_fail(err, AS_ECRYPTO, "PKCS#11 %s failed: %s (0x%lx)", what, ckr_name(rv), (unsigned long)rv);
}

static int module_load(struct p11 *p, const char *path, char *err)
{
	p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!p->dl) {
		const char *e = dlerror();
		return as_fail(err, AS_EIO, "cannot load the PKCS#11 module %s (ASSENT_PKCS11_MODULE): %.160s", path,
			       e ? e : "?");
	}
	CK_C_GetFunctionList get;
	*(void **)&get = dlsym(p->dl, "C_GetFunctionList");
	if (!get || get(&p->f) != CKR_OK || !p->f)
		return as_fail(err, AS_EINVAL, "%s is not a PKCS#11 module (no C_GetFunctionList)", path);
	CK_C_INITIALIZE_ARGS args = {.flags = CKF_OS_LOCKING_OK};
	CK_RV rv = p->f->C_Initialize(&args);
	if (rv != CKR_OK)
		return rv_fail(err, rv, "C_Initialize of the module");
	p->initialized = 1;
	return 0;
}

/* CK_TOKEN_INFO.label is 32 bytes padded with blanks, not terminated. */
static int label_is(const CK_UTF8CHAR lab[32], const char *want)
{
	size_t n = strlen(want);
	if (n > 32 || memcmp(lab, want, n) != 0)
		return 0;
	for (size_t i = n; i < 32; i++)
		if (lab[i] != ' ')
			return 0;
	return 1;
}

static int slot_find(struct p11 *p, const char *label, CK_SLOT_ID *slot, char *err)
{
	CK_ULONG n = 0;
	CK_RV rv = p->f->C_GetSlotList(CK_TRUE, NULL, &n);
	if (rv != CKR_OK)
		return rv_fail(err, rv, "C_GetSlotList");
	if (n > 1024)
		return as_fail(err, AS_ETOOBIG, "the PKCS#11 module reports %lu slots", (unsigned long)n);
	CK_SLOT_ID *ids = calloc(n ? n : 1, sizeof *ids);
	if (!ids)
		return as_fail(err, AS_ENOMEM, "out of memory");
	rv = p->f->C_GetSlotList(CK_TRUE, ids, &n);
	int found = 0;
	for (CK_ULONG i = 0; rv == CKR_OK && i < n && !found; i++) {
		CK_TOKEN_INFO ti;
		if (p->f->C_GetTokenInfo(ids[i], &ti) == CKR_OK && label_is(ti.label, label)) {
			*slot = ids[i];
			found = 1;
		}
	}
	free(ids);
	if (rv != CKR_OK)
		return rv_fail(err, rv, "C_GetSlotList");
	if (!found)
		return as_fail(err, AS_ENOTFOUND,
			       "no PKCS#11 token labelled '%s' (ASSENT_PKCS11_TOKEN) among the module's %lu", label,
			       (unsigned long)n);
	return 0;
}

static int login(struct p11 *p, const char *pin_file, char *err)
{
	char pin[P11_PIN_MAX + 2];
	size_t n = 0;
	GUARD(pin_read(pin_file, pin, &n, err));
	CK_RV rv = p->f->C_Login(p->s, CKU_USER, (CK_UTF8CHAR_PTR)pin, n);
	explicit_bzero(pin, sizeof pin);
	if (rv == CKR_USER_ALREADY_LOGGED_IN)
		rv = CKR_OK;
	if (rv == CKR_PIN_INCORRECT)
		return as_fail(err, AS_EINVAL,
			       "PKCS#11 login to token '%s' refused: wrong PIN (CKR_PIN_INCORRECT) in %s", p->token,
			       pin_file);
	if (rv != CKR_OK)
		return rv_fail(err, rv, "C_Login");
	p->logged_in = 1;
	return 0;
}

int p11_open(const struct p11_config *c, int rw, struct p11 **out, char *err)
{
	struct p11 *p = calloc(1, sizeof *p);
	if (!p)
		return as_fail(err, AS_ENOMEM, "out of memory");
	p->pid = getpid();
	pthread_mutex_init(&p->lock, NULL);
	snprintf(p->token, sizeof p->token, "%s", c->token);
	CK_SLOT_ID slot = 0;
	int rc = module_load(p, c->module, err);
	if (rc == 0)
		rc = slot_find(p, c->token, &slot, err);
	if (rc == 0) {
		CK_FLAGS fl = CKF_SERIAL_SESSION | (rw ? CKF_RW_SESSION : 0);
		CK_RV rv = p->f->C_OpenSession(slot, fl, NULL, NULL, &p->s);
		if (rv != CKR_OK)
			rc = rv_fail(err, rv, "C_OpenSession");
		else
			p->session = 1;
	}
	if (rc == 0)
		rc = login(p, c->pin_file, err);
	if (rc != 0) {
		p11_close(p);
		return rc;
	}
	*out = p;
	return 0;
}

void p11_close(struct p11 *p)
{
	if (!p)
		return;
	if (p->pid == getpid()) { /* a forked child leaves the parent's session alone */
		if (p->logged_in)
			p->f->C_Logout(p->s);
		if (p->session)
			p->f->C_CloseSession(p->s);
		if (p->initialized)
			p->f->C_Finalize(NULL);
		if (p->dl)
			dlclose(p->dl);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* ---- parsing what the module returns ---- */

int p11_parse_point(const uint8_t *der, size_t n, uint8_t x[32], uint8_t y[32])
{
	struct rd r;
	const uint8_t *pt;
	uint8_t tag, len, form;
	rd_init(&r, der, n);
	if (n == 67) { /* OCTET STRING, short-form length 65 (DER: the only encoding of 65) */
		if (rd_u8(&r, &tag) != 0 || tag != 0x04 || rd_u8(&r, &len) != 0 || len != 65)
			return AS_EINVAL;
	} else if (n != 65) { /* the bare point, as some modules give it */
		return AS_EINVAL;
	}
	if (rd_u8(&r, &form) != 0 || form != 0x04 || rd_take(&r, 64, &pt) != 0 || rd_left(&r) != 0)
		return AS_EINVAL; /* 0x04: uncompressed, the only form we accept */
	memcpy(x, pt, 32);
	memcpy(y, pt + 32, 32);
	return 0;
}

/* CKA_EC_PARAMS of P-256, namedCurve: OBJECT IDENTIFIER 1.2.840.10045.3.1.7 (prime256v1) */
static const uint8_t p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};

int p11_params_p256(const uint8_t *der, size_t n)
{
	return n == sizeof p256 && memcmp(der, p256, n) == 0 ? 0 : AS_EINVAL;
}

/* ---- keys ---- */

/* Up to max objects matching tmpl; *n how many there were (at most max). */
static int objects_find(struct p11 *p, CK_ATTRIBUTE *tmpl, CK_ULONG nt, CK_OBJECT_HANDLE *h, CK_ULONG max, CK_ULONG *n,
			char *err)
{
	CK_RV rv = p->f->C_FindObjectsInit(p->s, tmpl, nt);
	if (rv != CKR_OK)
		return rv_fail(err, rv, "C_FindObjectsInit");
	rv = p->f->C_FindObjects(p->s, h, max, n);
	p->f->C_FindObjectsFinal(p->s);
	return rv == CKR_OK ? 0 : rv_fail(err, rv, "C_FindObjects");
}

/* The one object of class cls labelled label. */
static int object_one(struct p11 *p, CK_OBJECT_CLASS cls, const char *label, CK_OBJECT_HANDLE *h, char *err)
{
	CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof cls}, {CKA_LABEL, (void *)label, strlen(label)}};
	CK_OBJECT_HANDLE hs[2];
	CK_ULONG n = 0;
	GUARD(objects_find(p, t, 2, hs, 2, &n, err));
	const char *what = cls == CKO_PRIVATE_KEY ? "private" : "public";
	if (n == 0)
		return as_fail(err, AS_ENOTFOUND,
			       "no %s key labelled '%s' in PKCS#11 token '%s' (create it with assent keygen --pkcs11)",
			       what, label, p->token);
	if (n > 1)
		return as_fail(err, AS_EINVAL, "more than one %s key labelled '%s' in PKCS#11 token '%s'", what, label,
			       p->token);
	*h = hs[0];
	return 0;
}

/* A byte-string attribute of at most max bytes. */
static int attr_bytes(struct p11 *p, CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, uint8_t *out, size_t max, size_t *n)
{
	CK_ATTRIBUTE a = {type, NULL, 0};
	if (p->f->C_GetAttributeValue(p->s, h, &a, 1) != CKR_OK || a.ulValueLen == CK_UNAVAILABLE_INFORMATION ||
	    a.ulValueLen > max)
		return AS_EINVAL;
	a.pValue = out;
	if (p->f->C_GetAttributeValue(p->s, h, &a, 1) != CKR_OK)
		return AS_EINVAL;
	*n = a.ulValueLen;
	return 0;
}

static int public_of(struct p11 *p, const char *label, struct eckey **pub, char *err)
{
	CK_OBJECT_HANDLE h;
	GUARD(object_one(p, CKO_PUBLIC_KEY, label, &h, err));
	uint8_t params[P11_PARAMS_MAX], point[P11_POINT_MAX], x[32], y[32];
	size_t np = 0, nq = 0;
	if (attr_bytes(p, h, CKA_EC_PARAMS, params, sizeof params, &np) != 0 || p11_params_p256(params, np) != 0)
		return as_fail(err, AS_EINVAL,
			       "the key labelled '%s' in PKCS#11 token '%s' is not a P-256 EC key (CKA_EC_PARAMS)",
			       label, p->token);
	if (attr_bytes(p, h, CKA_EC_POINT, point, sizeof point, &nq) != 0 || p11_parse_point(point, nq, x, y) != 0 ||
	    eckey_from_xy(x, y, pub) != 0)
		return as_fail(err, AS_EINVAL,
			       "the public key labelled '%s' in PKCS#11 token '%s' has no valid P-256 point "
			       "(CKA_EC_POINT, %zu bytes)",
			       label, p->token, nq);
	return 0;
}

static int sign_hash(struct p11_key *k, const uint8_t hash[32], uint8_t rs[64])
{
	struct p11 *p = k->p;
	if (p->pid != getpid()) /* the session is the parent's: a forked child must not touch it */
		return AS_EINVAL;
	CK_MECHANISM m = {CKM_ECDSA, NULL, 0};
	CK_ULONG n = 64;
	pthread_mutex_lock(&p->lock);
	CK_RV rv = p->f->C_SignInit(p->s, &m, k->priv);
	if (rv == CKR_OK)
		rv = p->f->C_Sign(p->s, (CK_BYTE_PTR)hash, 32, rs, &n);
	pthread_mutex_unlock(&p->lock);
	return rv == CKR_OK && n == 64 ? 0 : AS_ECRYPTO;
}

int p11_key_find(struct p11 *p, const char *label, struct p11_key **out, char *err)
{
	struct p11_key *k = calloc(1, sizeof *k);
	if (!k)
		return as_fail(err, AS_ENOMEM, "out of memory");
	k->p = p;
	snprintf(k->label, sizeof k->label, "%s", label);
	CK_KEY_TYPE kt = 0;
	CK_ATTRIBUTE a = {CKA_KEY_TYPE, &kt, sizeof kt};
	int rc = object_one(p, CKO_PRIVATE_KEY, label, &k->priv, err);
	if (rc == 0 && (p->f->C_GetAttributeValue(p->s, k->priv, &a, 1) != CKR_OK || kt != CKK_EC))
		rc = as_fail(err, AS_EINVAL, "the private key labelled '%s' in PKCS#11 token '%s' is not an EC key",
			     label, p->token);
	if (rc == 0)
		rc = public_of(p, label, &k->pub, err);
	/* The token must sign with the key whose public half we publish. */
	static const char probe[] = "assent: PKCS#11 key self-check";
	uint8_t h[32], rs[64];
	mbedtls_sha256_ret((const unsigned char *)probe, sizeof probe - 1, h, 0);
	if (rc == 0 && sign_hash(k, h, rs) != 0)
		rc = as_fail(err, AS_ECRYPTO, "PKCS#11 token '%s' cannot sign with the key labelled '%s' (CKM_ECDSA)",
			     p->token, label);
	if (rc == 0 && eckey_verify_rs(k->pub, h, rs) != 0)
		rc = as_fail(err, AS_ECRYPTO,
			     "the private and public keys labelled '%s' in PKCS#11 token '%s' are not one pair", label,
			     p->token);
	if (rc != 0) {
		p11_key_free(k);
		return rc;
	}
	*out = k;
	return 0;
}

void p11_key_free(struct p11_key *k)
{
	if (!k)
		return;
	eckey_free(k->pub);
	free(k);
}

const struct eckey *p11_key_public(const struct p11_key *k)
{
	return k->pub;
}

int p11_sign_rs(struct p11_key *k, const uint8_t hash[32], uint8_t rs[64])
{
	GUARD(sign_hash(k, hash, rs));
	eckey_s_low(rs + 32); /* either s verifies; tokens and notes carry the low one */
	return 0;
}

int p11_note_sign(void *k, const void *msg, size_t n, uint8_t *sig, size_t *siglen)
{
	uint8_t h[32], rs[64];
	mbedtls_sha256_ret(msg, n, h, 0);
	GUARD(p11_sign_rs(k, h, rs));
	return eckey_rs_der(rs, sig, siglen);
}

int p11_keygen(struct p11 *p, const char *label, char *err)
{
	CK_ATTRIBUTE t[] = {{CKA_LABEL, (void *)label, strlen(label)}};
	CK_OBJECT_HANDLE h[1];
	CK_ULONG n = 0;
	GUARD(objects_find(p, t, 1, h, 1, &n, err));
	if (n > 0)
		return as_fail(
		    err, AS_EEXIST,
		    "PKCS#11 token '%s' already holds a key labelled '%s': refusing to make another (choose a "
		    "new label to rotate)",
		    p->token, label);
	uint8_t id[16];
	if (getrandom(id, sizeof id, 0) != (ssize_t)sizeof id)
		return as_fail(err, AS_EIO, "no randomness from the kernel (getrandom)");
	CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
	CK_ATTRIBUTE pub[] = {{CKA_TOKEN, &yes, sizeof yes},
			      {CKA_VERIFY, &yes, sizeof yes},
			      {CKA_EC_PARAMS, (void *)p256, sizeof p256},
			      {CKA_LABEL, (void *)label, strlen(label)},
			      {CKA_ID, id, sizeof id}};
	CK_ATTRIBUTE priv[] = {{CKA_TOKEN, &yes, sizeof yes},
			       {CKA_PRIVATE, &yes, sizeof yes},
			       {CKA_SENSITIVE, &yes, sizeof yes},
			       {CKA_EXTRACTABLE, &no, sizeof no},
			       {CKA_SIGN, &yes, sizeof yes},
			       {CKA_LABEL, (void *)label, strlen(label)},
			       {CKA_ID, id, sizeof id}};
	CK_MECHANISM m = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
	CK_OBJECT_HANDLE hpub, hpriv;
	CK_RV rv = p->f->C_GenerateKeyPair(p->s, &m, pub, sizeof pub / sizeof pub[0], priv,
					   sizeof priv / sizeof priv[0], &hpub, &hpriv);
	return rv == CKR_OK ? 0 : rv_fail(err, rv, "C_GenerateKeyPair");
}
