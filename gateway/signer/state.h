/* Everything a file of gateway/signer/ may call: the core (core/core.h), the signer's state
 * (types.h), and each capability's header. Internal to gateway/signer/: nothing outside it
 * includes this (the CLI and the tests use signer.h and testseam.h). */
#ifndef ASSENT_SIGNER_STATE_H
#define ASSENT_SIGNER_STATE_H

#include "gateway/signer/types.h"
#include "gateway/signer/requests.h"
#include "gateway/signer/review.h"
#include "gateway/signer/gate.h"
#include "gateway/signer/records.h"
#include "gateway/signer/notify.h"
#include "gateway/signer/witness.h"
#include "gateway/signer/loop.h"
#include "gateway/signer/passkey.h"
#include "gateway/signer/cluster.h"

#endif
