/* assent-verify: offline checks for pipeline owners and auditors.
 * Exit status: 0 holds, 1 does not hold (one line on stderr), 2 usage or I/O error.
 * This file reads the command line; the commands are verify/commands.c's. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "include/assent/version.h"
#include "verify/commands.h"

static const char usage_text[] =
    "usage: assent-verify COMMAND [OPTIONS]\n"
    "       assent-verify --version | --help\n"
    "\n"
    "Commands:\n"
    "  token [TOKEN | -] --aud AUD [--key PUB.pem]... [--jwks FILE] [--secret-env VAR]\n"
    "        [--iss ISS] [--subject FILE]... [--subject-sha256 HEX]... [--action-sha256 HEX]\n"
    "        [--ledger DIR [--key-sha256 HEX | --key-from-state] [--require-passkey]\n"
    "        [--passkeys FILE]]\n"
    "        [--leeway S] [--require-computed] [--json]\n"
    "      Verify an approval token (from the argument, or standard input with - or\n"
    "      none): signature by a key you give (ES256 keys, low s only, or an HS256\n"
    "      secret read from the environment variable VAR), audience, issuer, time\n"
    "      (leeway default 60 s), approved, assurance, each subject file's SHA-256, the\n"
    "      action digest, and with --ledger the decision entry it names.\n"
    "      --require-computed: the subjects checked (all, when none is given) were\n"
    "      hashed by the gateway from their bytes, not asserted by the agent.\n"
    "      With --ledger and the checkpoint key pinned (--key-sha256 or\n"
    "      --key-from-state), the whole ledger is verified as `ledger` does (passkey\n"
    "      decisions too) and a checkpoint that key signed must cover the decision;\n"
    "      without a pin, only the chain up to the decision is read.\n"
    "      --require-passkey (needs the pin): the decision carries the reviewer's\n"
    "      passkey assertion.\n"
    "  ledger DIR KEYPIN [--trusted FILE]... [--allow-unsigned-tail N] [WITNESSES]\n"
    "        [--passkeys FILE] [--json]\n"
    "      Check every entry, every link, that entry times never go backwards, every\n"
    "      signed checkpoint, that each --trusted checkpoint (one you saved earlier) is\n"
    "      consistent with the ledger, and that a checkpoint signed by the pinned key\n"
    "      covers the head: entries after the newest one (an unsigned tail) fail\n"
    "      unless there are at most N. Prints how many there are. Every passkey\n"
    "      decision is checked against the credentials the ledger enrolled; with\n"
    "      --passkeys FILE (lines: REVIEWER CREDENTIAL_ID, as each reviewer confirmed\n"
    "      to you) only those count, so an enrolment the gateway's root appended fails.\n"
    "      With WITNESSES: a stored checkpoint must be cosigned by enough of them;\n"
    "      prints the newest such (\"witnessed: size M\") and how many entries come\n"
    "      after it.\n"
    "  checkpoint DIR KEYPIN [WITNESSES]\n"
    "      Print the latest signed checkpoint, to save or hand to a witness; with\n"
    "      WITNESSES, the newest one enough of them cosigned.\n"
    "  checkpoint --check FILE --key PUB.pem... [WITNESSES]\n"
    "      Check a checkpoint file's signature and, with WITNESSES, its cosignatures.\n"
    "  export DIR [--from SEQ] [--to SEQ]\n"
    "      Print entries as JSON lines: {\"seq\", \"leaf_hash\", \"entry\"}; byte strings as hex.\n"
    "  proof DIR SEQ [--size N] KEYPIN\n"
    "      Print an RFC 9162 inclusion proof of entry SEQ (default size: latest checkpoint).\n"
    "  proof --check FILE --key PUB.pem... [--checkpoint FILE]\n"
    "      Check a proof against its signed checkpoint (or one you give); print the\n"
    "      entry it proves.\n"
    "  consistency DIR OLD NEW\n"
    "      Print the RFC 9162 consistency proof from tree size OLD to NEW (at most the\n"
    "      latest checkpoint's), one base64 hash a line, as GET /checkpoint/consistency.\n"
    "  consistency --old FILE --new FILE --proof FILE --key PUB.pem... [WITNESSES]\n"
    "      Check that the signed checkpoint NEW extends OLD: both signed by a key given,\n"
    "      same origin, and the proof leads from the old root to the new one; with\n"
    "      WITNESSES, OLD is cosigned by enough of them.\n"
    "  exact DIR EXACTDIR\n"
    "      Check the retained exact calls (STATE/exact) against the ledger: each file\n"
    "      hashes to its name and to a request entry's action, that entry's view shows\n"
    "      every character of the call but in marks stating how much they hide, and\n"
    "      every entry whose view masked something has its file. Check the ledger\n"
    "      itself with `ledger` first.\n"
    "\n"
    "DIR is the ledger directory (STATE/ledger). KEYPIN pins the checkpoint key:\n"
    "  --key PUB.pem...    a copy of the key you trust\n"
    "  --key-sha256 HEX    DIR/../keys/checkpoint.pub, if the SHA-256 of its DER\n"
    "                      SubjectPublicKeyInfo is HEX\n"
    "  --trusted FILE      (ledger) DIR/../keys/checkpoint.pub, if it signed FILE\n"
    "  --key-from-state    DIR/../keys/checkpoint.pub unpinned: proves the ledger\n"
    "                      consistent with itself only (a forged key passes)\n"
    "WITNESSES (C2SP tlog-cosignature cosignature/v1, Ed25519) are:\n"
    "  --witness VKEY      a witness's NAME+KEYIDHEX+BASE64(0x04 || key); repeatable\n"
    "  --witness-file FILE one vkey a line (# comments and blank lines skipped)\n"
    "  --witness-threshold N  distinct witnesses that must cosign one checkpoint\n"
    "                      (default 1); a forged cosignature by one given fails\n"
    "Exit status: 0 holds, 1 does not hold (reason on stderr), 2 usage or I/O error.\n";

/* ---- argument parsing ---- */

static int add_key(struct keyopts *k, const char *path)
{
	if (k->nkeys == VKEYS_MAX)
		return usage_error("at most %d --key options", VKEYS_MAX);
	k->keys[k->nkeys++] = path;
	return 0;
}

enum {
	O_KEY = 1,
	O_TRUSTED,
	O_JSON,
	O_FROM,
	O_TO,
	O_SIZE,
	O_CHECK,
	O_CKPT,
	O_HELP,
	O_AUD,
	O_JWKS,
	O_SECRET_ENV,
	O_ISS,
	O_SUBJECT,
	O_SUBJECT_SHA,
	O_ACTION,
	O_LEDGER,
	O_LEEWAY,
	O_OLD,
	O_NEW,
	O_PROOF,
	O_KEY_FROM_STATE = 100,
	O_KEY_SHA256,
	O_ALLOW_TAIL,
	O_REQUIRE_COMPUTED,
	O_REQUIRE_PASSKEY,
	O_PASSKEYS,
	O_WITNESS,
	O_WITNESS_FILE,
	O_WITNESS_THRESHOLD
};
static const struct option longopts[] = {
    {"key", required_argument, NULL, O_KEY},
    {"trusted", required_argument, NULL, O_TRUSTED},
    {"json", no_argument, NULL, O_JSON},
    {"from", required_argument, NULL, O_FROM},
    {"to", required_argument, NULL, O_TO},
    {"size", required_argument, NULL, O_SIZE},
    {"check", required_argument, NULL, O_CHECK},
    {"checkpoint", required_argument, NULL, O_CKPT},
    {"old", required_argument, NULL, O_OLD},
    {"new", required_argument, NULL, O_NEW},
    {"proof", required_argument, NULL, O_PROOF},
    {"help", no_argument, NULL, O_HELP},
    {"aud", required_argument, NULL, O_AUD},
    {"jwks", required_argument, NULL, O_JWKS},
    {"secret-env", required_argument, NULL, O_SECRET_ENV},
    {"iss", required_argument, NULL, O_ISS},
    {"subject", required_argument, NULL, O_SUBJECT},
    {"subject-sha256", required_argument, NULL, O_SUBJECT_SHA},
    {"action-sha256", required_argument, NULL, O_ACTION},
    {"require-computed", no_argument, NULL, O_REQUIRE_COMPUTED},
    {"require-passkey", no_argument, NULL, O_REQUIRE_PASSKEY},
    {"passkeys", required_argument, NULL, O_PASSKEYS},
    {"ledger", required_argument, NULL, O_LEDGER},
    {"leeway", required_argument, NULL, O_LEEWAY},
    /* ledger key pinning */
    {"key-from-state", no_argument, NULL, O_KEY_FROM_STATE},
    {"key-sha256", required_argument, NULL, O_KEY_SHA256},
    {"allow-unsigned-tail", required_argument, NULL, O_ALLOW_TAIL},
    /* witnesses' cosignatures */
    {"witness", required_argument, NULL, O_WITNESS},
    {"witness-file", required_argument, NULL, O_WITNESS_FILE},
    {"witness-threshold", required_argument, NULL, O_WITNESS_THRESHOLD},
    {NULL, 0, NULL, 0},
};

/* Everything the options say, for any command (each reads its own). */
struct opts {
	struct ledger_args la;
	struct dir_args da;
	const char *trusted[64];
	size_t ntrusted;
	const char *passkeys; /* --passkeys FILE (ledger, token) */
	const char *check, *ckfile;
	const char *oldf, *newf, *prooff; /* consistency --old --new --proof */
	int have_size;
	struct token_args ta;
	const char *subjects[64], *subject_shas[64];
	struct witopts w;
	int threshold_given;
};

/* What an option's step returns besides an exit status: taken (read the next), or not
 * this step's option. */
#define OPT_TAKEN (-1)
#define OPT_NOT_MINE (-2)

static int add_witness(struct witopts *w, const char *vkey)
{
	if (w->n == AV_WITNESS_MAX)
		return usage_error("at most %d witnesses (--witness, --witness-file)", AV_WITNESS_MAX);
	w->vkeys[w->n++] = vkey;
	return 0;
}

/* --witness-file FILE: one vkey a line; blank lines and lines starting with # are skipped,
 * trailing spaces and a CR dropped. The texts are kept until main returns: the vkeys point
 * into them. */
#define WITNESS_FILE_MAX 65536
#define WITNESS_FILES_MAX 8
static struct buf witness_files[WITNESS_FILES_MAX];
static size_t nwitness_files;

static int add_witness_file(struct witopts *w, const char *path)
{
	char err[AS_ERRLEN];
	if (nwitness_files == WITNESS_FILES_MAX)
		return usage_error("at most %d --witness-file options", WITNESS_FILES_MAX);
	struct buf *fb = &witness_files[nwitness_files];
	if (file_read(path, WITNESS_FILE_MAX, fb, err) != 0)
		return usage_error("--witness-file: %s", err);
	nwitness_files++;
	if (buf_putc(fb, 0) != 0 || memchr(fb->p, 0, fb->len - 1))
		return usage_error("--witness-file %.200s: a NUL byte, or over %d bytes", path, WITNESS_FILE_MAX);
	size_t before = w->n;
	for (char *line = (char *)fb->p, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		size_t n = strlen(line);
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
			line[--n] = 0;
		line += strspn(line, " \t");
		if (!*line || *line == '#')
			continue;
		if (add_witness(w, line))
			return EXIT_USAGE;
	}
	if (w->n == before)
		return usage_error("--witness-file %.200s names no witness", path);
	return 0;
}

/* The witness options: --witness, --witness-file, --witness-threshold. */
static int witness_option(struct opts *o, int c)
{
	uint64_t n;
	switch (c) {
	case O_WITNESS:
		return add_witness(&o->w, optarg) ? EXIT_USAGE : OPT_TAKEN;
	case O_WITNESS_FILE:
		return add_witness_file(&o->w, optarg) ? EXIT_USAGE : OPT_TAKEN;
	case O_WITNESS_THRESHOLD:
		if (parse_u64(optarg, &n) || n == 0 || n > AV_WITNESS_MAX)
			return usage_error("--witness-threshold: '%.40s' is not a number of witnesses from 1 to %d",
					   optarg, AV_WITNESS_MAX);
		o->w.threshold = (size_t)n;
		o->threshold_given = 1;
		return OPT_TAKEN;
	default:
		return OPT_NOT_MINE;
	}
}

/* The options of the ledger commands (keys, ranges, proofs, --json). */
static int ledger_option(struct opts *o, int c)
{
	struct ledger_args *la = &o->la;
	struct dir_args *da = &o->da;
	switch (c) {
	case O_KEY:
		if (add_key(&da->k, optarg))
			return EXIT_USAGE;
		break;
	case O_TRUSTED:
		if (o->ntrusted == 64)
			return usage_error("at most 64 --trusted options");
		o->trusted[o->ntrusted++] = optarg;
		break;
	case O_JSON:
		la->json = 1;
		break;
	case O_FROM:
		if (parse_u64(optarg, &da->from))
			return usage_error("--from: '%s' is not a sequence number", optarg);
		break;
	case O_TO:
		if (parse_u64(optarg, &da->to))
			return usage_error("--to: '%s' is not a sequence number", optarg);
		da->has_to = 1;
		break;
	case O_SIZE:
		if (parse_u64(optarg, &da->size) || da->size == 0)
			return usage_error("--size: '%s' is not a tree size", optarg);
		o->have_size = 1;
		break;
	case O_KEY_FROM_STATE:
		da->k.from_state = 1;
		break;
	case O_KEY_SHA256:
		if (strlen(optarg) != 64 || strspn(optarg, "0123456789abcdef") != 64)
			return usage_error("--key-sha256: '%.80s' is not 64 lowercase hex digits", optarg);
		da->k.sha256 = optarg;
		break;
	case O_ALLOW_TAIL:
		if (parse_u64(optarg, &la->o.allow_unsigned_tail))
			return usage_error("--allow-unsigned-tail: '%.80s' is not a number of entries", optarg);
		break;
	case O_PASSKEYS:
		o->passkeys = optarg;
		break;
	case O_CHECK:
		o->check = optarg;
		break;
	case O_CKPT:
		o->ckfile = optarg;
		break;
	case O_OLD:
		o->oldf = optarg;
		break;
	case O_NEW:
		o->newf = optarg;
		break;
	case O_PROOF:
		o->prooff = optarg;
		break;
	default:
		return OPT_NOT_MINE;
	}
	return OPT_TAKEN;
}

/* The options of the token command. */
static int token_option(struct opts *o, int c)
{
	struct token_args *ta = &o->ta;
	uint64_t leeway;
	switch (c) {
	case O_AUD:
		ta->o.aud = optarg;
		break;
	case O_JWKS:
		ta->o.jwks_path = optarg;
		break;
	case O_SECRET_ENV: {
		const char *v = getenv(optarg);
		if (!v || !*v)
			return usage_error("--secret-env: environment variable %s is not set", optarg);
		ta->o.secret = (const uint8_t *)v;
		ta->o.secret_len = strlen(v);
		break;
	}
	case O_ISS:
		ta->o.iss = optarg;
		break;
	case O_SUBJECT:
		if (ta->o.nsubject_paths == 64)
			return usage_error("at most 64 --subject options");
		o->subjects[ta->o.nsubject_paths++] = optarg;
		break;
	case O_SUBJECT_SHA:
		if (ta->o.nsubject_sha256 == 64)
			return usage_error("at most 64 --subject-sha256 options");
		o->subject_shas[ta->o.nsubject_sha256++] = optarg;
		break;
	case O_ACTION:
		ta->o.action_sha256 = optarg;
		break;
	case O_REQUIRE_COMPUTED:
		ta->o.require_computed = 1;
		break;
	case O_REQUIRE_PASSKEY:
		ta->o.require_passkey = 1;
		break;
	case O_LEDGER:
		ta->o.ledger_dir = optarg;
		break;
	case O_LEEWAY:
		if (parse_u64(optarg, &leeway) || leeway > 86400)
			return usage_error("--leeway: '%s' is not a number of seconds up to 86400", optarg);
		ta->o.leeway = (long)leeway;
		break;
	default:
		return OPT_NOT_MINE;
	}
	return OPT_TAKEN;
}

/* All the options after the command; OPT_TAKEN, or the exit status to leave with. */
static int parse_options(int argc, char **argv, struct opts *o)
{
	optind = 2;
	opterr = 0; /* our own one-line messages, not getopt's */
	int c;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int rc = ledger_option(o, c);
		if (rc == OPT_NOT_MINE)
			rc = token_option(o, c);
		if (rc == OPT_NOT_MINE)
			rc = witness_option(o, c);
		if (rc != OPT_NOT_MINE && rc != OPT_TAKEN)
			return rc;
		if (rc == OPT_TAKEN)
			continue;
		switch (c) {
		case O_HELP:
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_HOLDS;
		case ':':
			return usage_error("option %s needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (o->threshold_given && o->w.n == 0)
		return usage_error("--witness-threshold needs --witness VKEY or --witness-file FILE");
	if (o->w.threshold > o->w.n)
		return usage_error("--witness-threshold %zu: only %zu witnesses given", o->w.threshold, o->w.n);
	return OPT_TAKEN;
}

/* consistency DIR OLD NEW (make a proof), or --old --new --proof (check one). */
static int consistency_command(struct opts *o, int npos, char **pos)
{
	struct dir_args *da = &o->da;
	if (o->oldf || o->newf || o->prooff) {
		if (!o->oldf || !o->newf || !o->prooff || npos != 0)
			return usage_error("consistency --old FILE --new FILE --proof FILE --key PUB.pem: all three "
					   "files and no other argument");
		return consistency_cmd(o->oldf, o->newf, o->prooff, &da->k, &o->w);
	}
	if (o->w.n)
		return usage_error("consistency: --witness checks the --old checkpoint of --old --new --proof");
	if (npos != 3)
		return usage_error("consistency takes a directory and two tree sizes (or --old, --new, --proof)");
	if (parse_u64(pos[1], &da->old_size) || parse_u64(pos[2], &da->new_size) || da->old_size == 0 ||
	    da->old_size > da->new_size)
		return usage_error("consistency: '%.40s' and '%.40s' must be tree sizes, 1 <= OLD <= NEW", pos[1],
				   pos[2]);
	da->dir = pos[0];
	return isolated(run_consistency, da, da->dir);
}

/* The command cmd with its npos operands pos, as the options set it up. */
static int run_command(const char *cmd, struct opts *o, int npos, char **pos)
{
	if (o->w.n && strcmp(cmd, "ledger") && strcmp(cmd, "checkpoint") && strcmp(cmd, "consistency"))
		return usage_error("%.40s: --witness and --witness-file are for ledger, checkpoint and consistency",
				   cmd);
	struct ledger_args *la = &o->la;
	struct dir_args *da = &o->da;
	struct token_args *ta = &o->ta;
	if (!strcmp(cmd, "token")) {
		if (npos > 1)
			return usage_error("token takes one token (or - for standard input)");
		if (!ta->o.aud)
			return usage_error("token: --aud is required");
		ta->o.key_paths = da->k.keys;
		ta->o.nkeys = da->k.nkeys;
		ta->o.ledger_key_sha256 = da->k.sha256; /* --key is the token's: the ledger's pins are these */
		ta->o.ledger_key_from_state = da->k.from_state;
		ta->o.passkeys_path = o->passkeys;
		if ((ta->o.ledger_key_sha256 || ta->o.ledger_key_from_state || ta->o.require_passkey || o->passkeys) &&
		    !ta->o.ledger_dir)
			return usage_error(
			    "token: --key-sha256, --key-from-state, --require-passkey and --passkeys need "
			    "--ledger DIR");
		if (ta->o.require_passkey && !ta->o.ledger_key_sha256 && !ta->o.ledger_key_from_state)
			return usage_error(
			    "token: --require-passkey needs the ledger's checkpoint key pinned (--key-sha256 "
			    "HEX or --key-from-state)");
		ta->json = la->json;
		if (read_token(npos ? pos[0] : NULL, &ta->tok) != 0)
			return usage_error("cannot read the token");
		/* With --ledger an LMDB file is read: isolate it like the ledger commands. */
		int rc = ta->o.ledger_dir ? isolated(run_token, ta, ta->o.ledger_dir) : run_token(ta);
		buf_free(&ta->tok);
		return rc;
	}
	if (!strcmp(cmd, "ledger")) {
		if (npos != 1)
			return usage_error("ledger takes one directory");
		la->dir = pos[0];
		la->o.key_paths = da->k.keys;
		la->o.nkeys = da->k.nkeys;
		la->o.trusted_paths = o->trusted;
		la->o.ntrusted = o->ntrusted;
		la->o.key_sha256 = da->k.sha256;
		la->o.key_from_state = da->k.from_state;
		la->o.passkeys_path = o->passkeys;
		la->o.witness_vkeys = o->w.vkeys;
		la->o.nwitnesses = o->w.n;
		la->o.witness_threshold = o->w.threshold;
		if (!la->o.nkeys && !la->o.ntrusted && !la->o.key_sha256 && !la->o.key_from_state)
			return usage_error(
			    "ledger: pin the checkpoint key with --key PUB.pem, --key-sha256 HEX or --trusted FILE "
			    "(--key-from-state proves consistency only)");
		return isolated(run_ledger, la, la->dir);
	}
	if (!strcmp(cmd, "checkpoint")) {
		if (o->check) {
			if (npos != 0)
				return usage_error("checkpoint --check FILE takes no other arguments");
			return checkpoint_check_cmd(o->check, &da->k, &o->w);
		}
		if (npos != 1)
			return usage_error("checkpoint takes one directory (or --check FILE)");
		da->dir = pos[0];
		da->w = o->w;
		return isolated(run_checkpoint, da, da->dir);
	}
	if (!strcmp(cmd, "export")) {
		if (npos != 1)
			return usage_error("export takes one directory");
		if (da->has_to && da->to < da->from)
			return usage_error("--to is before --from");
		da->dir = pos[0];
		return isolated(run_export, da, da->dir);
	}
	if (!strcmp(cmd, "exact")) {
		if (npos != 2)
			return usage_error("exact takes the ledger directory and the exact calls' directory");
		struct exact_args ea = {pos[0], pos[1]};
		return isolated(run_exact, &ea, pos[0]);
	}
	if (!strcmp(cmd, "proof")) {
		if (o->check) {
			if (npos != 0)
				return usage_error("proof --check FILE takes no other arguments");
			return proof_check_cmd(o->check, o->ckfile, &da->k);
		}
		if (npos != 2)
			return usage_error("proof takes a directory and a sequence number");
		if (parse_u64(pos[1], &da->seq))
			return usage_error("'%s' is not a sequence number", pos[1]);
		(void)o->have_size;
		da->dir = pos[0];
		return isolated(run_proof, da, da->dir);
	}
	if (!strcmp(cmd, "consistency"))
		return consistency_command(o, npos, pos);
	return usage_error("unknown command '%s'", cmd);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("missing command");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(usage_text, stdout);
		return EXIT_HOLDS;
	}
	if (!strcmp(argv[1], "--version")) {
		puts("assent-verify " ASSENT_VERSION);
		return EXIT_HOLDS;
	}
	const char *cmd = argv[1];
	struct opts o = {0}; /* the token's subject lists point into it */
	o.ta.o.subject_paths = o.subjects;
	o.ta.o.subject_sha256 = o.subject_shas;
	o.ta.o.leeway = -1;
	int rc = parse_options(argc, argv, &o);
	if (rc == OPT_TAKEN)
		rc = run_command(cmd, &o, argc - optind, argv + optind);
	for (size_t i = 0; i < nwitness_files; i++)
		buf_free(&witness_files[i]);
	return rc;
}
