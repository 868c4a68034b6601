/*-------------------------------------------------------------------------
 *
 * buf.h
 *	  A growable, NUL-terminated byte buffer in malloc'd memory, for the
 *	  PostgreSQL-free model code (the SSE parser and the adapters).
 *
 * IDENTIFICATION
 *	  src/model/buf.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_BUF_H
#define ADK_BUF_H

#include <stddef.h>

/* data is always NUL-terminated once allocated */
typedef struct LlmBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} LlmBuf;

/* 0 ok, -1 out of memory (b unchanged) */
extern int	llm_buf_append(LlmBuf *b, const char *s, size_t n);
extern void llm_buf_free(LlmBuf *b);

#endif							/* ADK_BUF_H */
