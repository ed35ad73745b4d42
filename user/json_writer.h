/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A small streaming JSON writer: every --json output goes through it, so
 * quoting, escaping and separators are right in one place.
 */
#ifndef ISNGUARD_JSON_WRITER_H
#define ISNGUARD_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json_writer {
	FILE *out;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
	bool after_name;
};

void jw_init(struct json_writer *jw, FILE *out);
/* Ends the document with a newline. */
void jw_finish(struct json_writer *jw);

void jw_start_object(struct json_writer *jw);
void jw_end_object(struct json_writer *jw);
void jw_start_array(struct json_writer *jw);
void jw_end_array(struct json_writer *jw);
void jw_name(struct json_writer *jw, const char *name);

void jw_string(struct json_writer *jw, const char *value);
void jw_uint(struct json_writer *jw, uint64_t value);
void jw_int(struct json_writer *jw, int64_t value);
void jw_double(struct json_writer *jw, double value, int decimals);
void jw_bool(struct json_writer *jw, bool value);

/* name: value pairs. */
void jw_string_field(struct json_writer *jw, const char *name, const char *value);
void jw_uint_field(struct json_writer *jw, const char *name, uint64_t value);
void jw_double_field(struct json_writer *jw, const char *name, double value,
		     int decimals);
void jw_bool_field(struct json_writer *jw, const char *name, bool value);

#endif /* ISNGUARD_JSON_WRITER_H */
