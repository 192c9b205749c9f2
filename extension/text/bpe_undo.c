/*
 * Undoing BPE segmentation (bpe.h): subword-nmt's
 *   sed -r 's/(@@ )|(@@ ?$)//g'
 * i.e. every "@@ " is deleted, and an "@@" (or "@@ ") that ends the text.
 * The rule scans left to right and resumes after each deletion, so
 * "x@@@@ y" becomes "x@@y", as sed gives.
 */
#include "text/bpe.h"

#include <string.h>

#include "common/mem.h"

size_t
cq_bpe_undo_inplace(char *s, size_t len)
{
	size_t		o = 0;

	for (size_t i = 0; i < len;)
	{
		if (s[i] == '@' && i + 1 < len && s[i + 1] == '@' &&
			((i + 2 < len && s[i + 2] == ' ') || i + 2 == len ||
			 (i + 3 == len && s[i + 2] == ' ')))
		{
			i += i + 2 < len ? 3 : 2;
			continue;
		}
		s[o++] = s[i++];
	}
	return o;
}

char *
cq_bpe_undo(const char *text, size_t len, size_t *out_len)
{
	char	   *s = cq_alloc(len + 1);

	if (!s)
		return NULL;
	memcpy(s, text, len);
	len = cq_bpe_undo_inplace(s, len);
	s[len] = '\0';
	if (out_len)
		*out_len = len;
	return s;
}
