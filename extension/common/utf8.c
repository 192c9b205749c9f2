#include "common/utf8.h"

bool
cq_utf8_valid(const uint8_t *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		size_t		n;

		if (s[i] == 0)
			return false;
		if (s[i] < 0x80)
		{
			i++;
			continue;
		}
		n = cq_utf8_decode(s + i, len - i, NULL);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}
