/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The secret key from a file, and into the pinned state (user/key.c). */
#ifndef ISNGUARD_KEYFILE_H
#define ISNGUARD_KEYFILE_H

#include <stdbool.h>
#include "isnguard.h"

/*
 * The key in path (32 hex digits, surrounding whitespace ignored; "-":
 * stdin). private_only refuses a file that group or others can read. 0, or
 * the exit code after a one-line error: 1 unreadable or shared, 2 bad key.
 */
int key_file_read(const char *cmd, const char *path, bool private_only, struct isn_key *key);
/*
 * Makes key current (a rotation: the previous key's SYN cookies stay valid
 * for a cookie slot); 0 or EXIT_RUNTIME after a one-line error.
 */
int key_write(const struct isn_key *key);
/*
 * Makes the key of a key file (group/other-readable refused) current unless
 * it is already: the SHA-256 of the key applied last and the key generation
 * it got are pinned beside the state (ISN_MAP_KEY_SOURCE), so a second
 * apply writes nothing, and one after 'key rotate' writes the file's key
 * again. *changed tells whether it was (or, with dry_run, would be)
 * written. 0 or an exit code after a one-line error.
 */
int key_apply_file(const char *cmd, const char *path, bool dry_run, bool *changed);

#endif /* ISNGUARD_KEYFILE_H */
