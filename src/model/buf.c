/*-------------------------------------------------------------------------
 *
 * buf.c
 *	  A growable, NUL-terminated byte buffer in malloc'd memory.
 *
 * IDENTIFICATION
 *	  src/model/buf.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/*
 * Append n bytes of s to b, doubling its capacity as needed.
 */
int
llm_buf_append(LlmBuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 64;
		char	   *nd;

		while (cap < b->len + n + 1)
			cap *= 2;
		nd = realloc(b->data, cap);
		if (nd == NULL)
			return -1;
		b->data = nd;
		b->cap = cap;
	}
	if (n > 0)
		memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

void
llm_buf_free(LlmBuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
