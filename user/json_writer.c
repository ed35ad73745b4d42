// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <math.h>

#include "json_writer.h"

void jw_init(struct json_writer *jw, FILE *out)
{
	jw->out = out;
	jw->depth = 0;
	jw->need_comma[0] = false;
	jw->after_name = false;
}

void jw_finish(struct json_writer *jw)
{
	fputc('\n', jw->out);
	fflush(jw->out);
}

/* Separator before a value or a name at the current depth. */
static void jw_begin_item(struct json_writer *jw)
{
	if (jw->after_name) {
		jw->after_name = false;
		return;
	}
	if (jw->need_comma[jw->depth])
		fputc(',', jw->out);
	jw->need_comma[jw->depth] = true;
}

static void jw_open(struct json_writer *jw, char c)
{
	jw_begin_item(jw);
	fputc(c, jw->out);
	if (jw->depth < JSON_MAX_DEPTH - 1)
		jw->depth++;
	jw->need_comma[jw->depth] = false;
}

static void jw_close(struct json_writer *jw, char c)
{
	if (jw->depth > 0)
		jw->depth--;
	fputc(c, jw->out);
}

void jw_start_object(struct json_writer *jw) { jw_open(jw, '{'); }
void jw_end_object(struct json_writer *jw) { jw_close(jw, '}'); }
void jw_start_array(struct json_writer *jw) { jw_open(jw, '['); }
void jw_end_array(struct json_writer *jw) { jw_close(jw, ']'); }

static void jw_quoted(struct json_writer *jw, const char *s)
{
	fputc('"', jw->out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", jw->out); break;
		case '\\': fputs("\\\\", jw->out); break;
		case '\n': fputs("\\n", jw->out); break;
		case '\r': fputs("\\r", jw->out); break;
		case '\t': fputs("\\t", jw->out); break;
		default:
			if (*p < 0x20)
				fprintf(jw->out, "\\u%04x", *p);
			else
				fputc(*p, jw->out);
		}
	}
	fputc('"', jw->out);
}

void jw_name(struct json_writer *jw, const char *name)
{
	jw_begin_item(jw);
	jw_quoted(jw, name);
	fputc(':', jw->out);
	jw->after_name = true;
}

void jw_string(struct json_writer *jw, const char *value)
{
	jw_begin_item(jw);
	jw_quoted(jw, value);
}

void jw_uint(struct json_writer *jw, uint64_t value)
{
	jw_begin_item(jw);
	fprintf(jw->out, "%" PRIu64, value);
}

void jw_int(struct json_writer *jw, int64_t value)
{
	jw_begin_item(jw);
	fprintf(jw->out, "%" PRId64, value);
}

void jw_double(struct json_writer *jw, double value, int decimals)
{
	jw_begin_item(jw);
	/* JSON has no NaN or infinity. */
	if (isfinite(value))
		fprintf(jw->out, "%.*f", decimals, value);
	else
		fputs("null", jw->out);
}

void jw_bool(struct json_writer *jw, bool value)
{
	jw_begin_item(jw);
	fputs(value ? "true" : "false", jw->out);
}

void jw_string_field(struct json_writer *jw, const char *name, const char *value)
{
	jw_name(jw, name);
	jw_string(jw, value);
}

void jw_uint_field(struct json_writer *jw, const char *name, uint64_t value)
{
	jw_name(jw, name);
	jw_uint(jw, value);
}

void jw_double_field(struct json_writer *jw, const char *name, double value,
		     int decimals)
{
	jw_name(jw, name);
	jw_double(jw, value, decimals);
}

void jw_bool_field(struct json_writer *jw, const char *name, bool value)
{
	jw_name(jw, name);
	jw_bool(jw, value);
}
