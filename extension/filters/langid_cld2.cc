// The CLD2 shim: C++ behind the C interface of langid.h (as text/spm.cc).
// CLD2 reports failures through its return values; the catch blocks only
// stop a C++ exception (std::bad_alloc) from unwinding into C.
#include "filters/langid.h"

#include <climits>
#include <cstdio>				// compact_lang_det.h uses FILE without it
#include <cstring>

// also declares LanguageCode, LanguageName, GetLanguageFromName
#include <cld2/public/compact_lang_det.h>
#include <cld2/public/encodings.h>

// The longest prefix of s[0..len) within INT_MAX bytes that ends on a
// character boundary (CLD2 takes an int length).
static int
clip_length(const char *s, size_t len)
{
	if (len <= (size_t) INT_MAX)
		return (int) len;
	size_t		n = INT_MAX;

	while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
		n--;
	return (int) n;
}

extern "C" bool
cq_langid(const char *s, size_t len, int hint, cq_langid_result *r)
{
	try
	{
		CLD2::Language hint_lang = hint < 0 ? CLD2::UNKNOWN_LANGUAGE : static_cast<CLD2::Language>(hint);
		CLD2::CLDHints hints = {nullptr, nullptr, CLD2::UNKNOWN_ENCODING, hint_lang};
		CLD2::Language lang3[3];
		int			percent3[3];
		double		score3[3];
		int			text_bytes = 0;
		int			valid_prefix = 0;
		bool		reliable = false;

		CLD2::ExtDetectLanguageSummaryCheckUTF8(s, clip_length(s, len), true, &hints, 0,
												lang3, percent3, score3, nullptr,
												&text_bytes, &reliable, &valid_prefix);
		r->lang = static_cast<int>(lang3[0]);
		r->prob = percent3[0] / 100.0;
		r->reliable = reliable;
		r->text_bytes = text_bytes;
		return true;
	}
	catch (...)
	{
		return false;
	}
}

extern "C" int
cq_langid_count(void)
{
	return static_cast<int>(CLD2::NUM_LANGUAGES);
}

extern "C" const char *
cq_langid_code(int lang)
{
	return CLD2::LanguageCode(static_cast<CLD2::Language>(lang));
}

extern "C" const char *
cq_langid_name(int lang)
{
	return CLD2::LanguageName(static_cast<CLD2::Language>(lang));
}

extern "C" int
cq_langid_lookup(const char *code_or_name)
{
	CLD2::Language lang = CLD2::GetLanguageFromName(code_or_name);

	// GetLanguageFromName answers UNKNOWN_LANGUAGE for names it does not know
	if (lang == CLD2::UNKNOWN_LANGUAGE && std::strcmp(code_or_name, "un") != 0)
		return -1;
	return static_cast<int>(lang);
}

extern "C" int
cq_langid_unknown(void)
{
	return static_cast<int>(CLD2::UNKNOWN_LANGUAGE);
}

extern "C" const char *
cq_langid_version(void)
{
	return CLD2::DetectLanguageVersion();
}
