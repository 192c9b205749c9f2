// The SentencePiece shim (spm.h): libsentencepiece's processor behind a C
// interface.  SentencePiece reports failures as util::Status; the catch
// blocks only stop a C++ exception (std::bad_alloc, Darts' exceptions) from
// unwinding into C.  cq_fail is called after every C++ object of the call is
// gone.  The library trusts its model, so no byte reaches it before
// cq_spm_check (text/spm_check.h) passed, and no result leaves the shim
// before it is checked to be UTF-8 without NUL: a model that got past the
// check and still produced other bytes is an error, never text for
// PostgreSQL.
#include "text/spm.h"
#include "text/spm_check.h"

extern "C"
{
#include "common/utf8.h"
}

#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <sentencepiece_processor.h>

struct cq_spm
{
	sentencepiece::SentencePieceProcessor sp;
	std::string out;			// the last result
	std::vector<std::string> pieces;	// piece i, for cq_spm_piece
};

// Copies a status message into msg (the caller reports it).
static void
message(char *msg, size_t size, const char *what, const sentencepiece::util::Status &st)
{
	snprintf(msg, size, "%s: %s", what, st.ToString().c_str());
}

extern "C" cq_code
cq_spm_load(const void *model, size_t len, cq_spm **out, cq_error *err)
{
	char		msg[CQ_ERROR_MESSAGE_SIZE] = "";
	cq_code		code = CQ_OK;
	cq_error	check = {};

	*out = nullptr;
	/* before any C++ object exists: the check may leave by longjmp (cq_poll) */
	if ((code = cq_spm_check(model, len, &check)) != CQ_OK)
		return cq_fail(err, code, "not a SentencePiece model corpq can load: %s", check.msg);
	try
	{
		/* freed here whatever the library throws */
		std::unique_ptr<cq_spm> m(new cq_spm());
		auto		st = m->sp.LoadFromSerializedProto(
			std::string_view(static_cast<const char *>(model), len));

		if (!st.ok())
		{
			/* the library's text names its source lines: not for users */
			snprintf(msg, sizeof(msg), "not a SentencePiece model libsentencepiece can load");
			code = CQ_EFORMAT;
		}
		else
		{
			m->pieces.reserve(m->sp.GetPieceSize());
			for (int i = 0; i < m->sp.GetPieceSize(); i++)
				m->pieces.push_back(m->sp.IdToPiece(i));
			*out = m.release();
		}
	}
	catch (const std::bad_alloc &)
	{
		snprintf(msg, sizeof(msg), "out of memory loading a SentencePiece model");
		code = CQ_ENOMEM;
	}
	catch (...)
	{
		snprintf(msg, sizeof(msg), "SentencePiece could not load the model");
		code = CQ_EFORMAT;
	}
	return code == CQ_OK ? CQ_OK : cq_fail(err, code, "%s", msg);
}

extern "C" void
cq_spm_free(cq_spm *m)
{
	delete m;
}

extern "C" int
cq_spm_pieces(const cq_spm *m)
{
	return (int) m->pieces.size();
}

extern "C" const char *
cq_spm_piece(const cq_spm *m, int i)
{
	return m->pieces[i].c_str();
}

// Joins v with single spaces into m->out.
static void
join(cq_spm *m, const std::vector<std::string> &v)
{
	m->out.clear();
	for (size_t i = 0; i < v.size(); i++)
	{
		if (i)
			m->out += ' ';
		m->out += v[i];
	}
}

// The call's result: m->out, or the failure recorded in msg (no C++
// object of the call is alive any more).
static cq_code
result(cq_spm *m, cq_code code, const char *msg, const char **out, size_t *out_len,
	   cq_error *err)
{
	if (code != CQ_OK)
		return cq_fail(err, code, "%s", msg);
	if (!cq_utf8_valid(reinterpret_cast<const uint8_t *>(m->out.data()), m->out.size()))
		return cq_fail(err, CQ_ECORRUPT, "the SentencePiece model produced bytes that are not UTF-8 (or NUL)");
	*out = m->out.c_str();
	*out_len = m->out.size();
	return CQ_OK;
}

extern "C" cq_code
cq_spm_encode(cq_spm *m, const char *text, size_t len, const char **out, size_t *out_len,
			  cq_error *err)
{
	char		msg[CQ_ERROR_MESSAGE_SIZE] = "";
	cq_code		code = CQ_OK;

	try
	{
		std::vector<std::string> v;
		auto		st = m->sp.Encode(std::string_view(text, len), &v);

		if (!st.ok())
		{
			message(msg, sizeof(msg), "SentencePiece could not encode the text", st);
			code = CQ_EINVAL;
		}
		else
			join(m, v);
	}
	catch (...)
	{
		snprintf(msg, sizeof(msg), "out of memory in SentencePiece");
		code = CQ_ENOMEM;
	}
	return result(m, code, msg, out, out_len, err);
}

extern "C" cq_code
cq_spm_decode(cq_spm *m, const char *pieces, size_t len, const char **out, size_t *out_len,
			  cq_error *err)
{
	char		msg[CQ_ERROR_MESSAGE_SIZE] = "";
	cq_code		code = CQ_OK;

	try
	{
		std::vector<std::string> v;
		size_t		i = 0;

		while (i < len)
		{
			size_t		j = i;

			while (j < len && pieces[j] != ' ')
				j++;
			if (j > i)
				v.emplace_back(pieces + i, j - i);
			i = j + 1;
		}
		auto		st = m->sp.Decode(v, &m->out);

		if (!st.ok())
		{
			message(msg, sizeof(msg), "SentencePiece could not decode the pieces", st);
			code = CQ_EINVAL;
		}
	}
	catch (...)
	{
		snprintf(msg, sizeof(msg), "out of memory in SentencePiece");
		code = CQ_ENOMEM;
	}
	return result(m, code, msg, out, out_len, err);
}
