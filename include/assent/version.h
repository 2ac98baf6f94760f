/* assent's version: the one place it is written. Every program's --version, the MCP
 * serverInfo, the daemon's assentd.json and the pkg-config file (the Makefile reads it
 * from here) all say this. */
#ifndef ASSENT_VERSION_H
#define ASSENT_VERSION_H

#define ASSENT_VERSION "0.1.0"

#endif
