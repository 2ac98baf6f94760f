/* Who owns the other end of a loopback TCP connection: the kernel knows (inet_diag
 * over NETLINK_SOCK_DIAG reports each socket's owner uid), so the signer measures an
 * HTTP agent's uid itself instead of taking it from anyone's word. */
#ifndef ASSENT_PEERUID_H
#define ASSENT_PEERUID_H

#include <sys/types.h>

/* The uid that owns the peer socket of the connected TCP socket fd, whatever address
 * the peer used (a local process may connect from any of the host's addresses, not
 * only loopback). 0 and *uid on success; AS_ENOTFOUND when the kernel knows no live
 * socket for that end (it closed, or it is on another machine); AS_EINVAL when fd is
 * not a connected TCP socket; AS_EIO when the kernel could not be asked. */
int peeruid_tcp(int fd, uid_t *uid, char *err);

/* 1 when the peer address of fd is a loopback one (127.0.0.0/8, ::1, v4-mapped 127/8). */
int peeruid_peer_is_loopback(int fd);

/* 1 when the peer address of fd is one of this host's own (loopback, or an address of
 * one of its interfaces: binding a socket to it works), else 0. A peer at such an
 * address is a local process, whose owner must then be measured. */
int peeruid_peer_is_local(int fd);

#endif
