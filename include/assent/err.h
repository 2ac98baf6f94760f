/* assent: the one error enum every module returns. Functions return 0 or one of
 * these negative codes; details go to a caller-supplied message buffer. */
#ifndef ASSENT_ERR_H
#define ASSENT_ERR_H

#include <stddef.h>

enum as_err {
	AS_OK = 0,
	AS_ENOMEM = -1,	  /* allocation failed or a size maximum was hit */
	AS_EINVAL = -2,	  /* bad argument or malformed input */
	AS_EIO = -3,	  /* a file or the LMDB environment could not be read or written */
	AS_ECORRUPT = -4, /* data fails an integrity check: tampered or damaged */
	AS_ETOOBIG = -5,  /* input over its documented maximum */
	AS_ENOTFOUND = -6,
	AS_ECRYPTO = -7, /* a key could not be generated, parsed or used */
	AS_EBADSIG = -8, /* a signature does not verify */
	AS_EEXIST = -9,
};

/* Size of the message buffers that functions taking `char *err` fill (may be NULL). */
#define AS_ERRLEN 256

const char *as_strerror(int code);

#endif
