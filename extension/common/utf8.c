#include "common/utf8.h"

bool
cq_utf8_valid(const uint8_t *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		uint32_t	cp;

		if (s[i] == 0)
			return false;
		if (s[i] < 0x80)
		{
			i++;
			continue;
		}
		i += cq_utf8_next(s + i, len - i, &cp);
		if (cp == CQ_UTF8_ILL)
			return false;
	}
	return true;
}

size_t
cq_utf8_to_cps(const uint8_t *s, size_t len, uint32_t *out)
{
	size_t		i = 0,
				n = 0;

	while (i < len)
	{
		if (s[i] < 0x80)
			out[n++] = s[i++];
		else
			i += cq_utf8_next_or_fffd(s + i, len - i, &out[n++]);
	}
	return n;
}
