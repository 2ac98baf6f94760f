/* Who owns the other end of a loopback TCP connection: the kernel knows (inet_diag
 * over NETLINK_SOCK_DIAG reports each socket's owner uid), so the signer measures an
 * HTTP agent's uid itself instead of taking it from anyone's word. */
#ifndef ASSENT_PEERUID_H
#define ASSENT_PEERUID_H

#include <sys/types.h>

/* The uid that owns the peer socket of the connected TCP socket fd, which must be a
 * loopback connection (both ends on this machine). 0 and *uid on success;
 * AS_ENOTFOUND when the kernel knows no live socket for that end (it closed, or it is
 * not on this machine); AS_EINVAL when fd is not a TCP loopback connection; AS_EIO
 * when the kernel could not be asked. err says which. */
int peeruid_tcp(int fd, uid_t *uid, char *err);

#endif
