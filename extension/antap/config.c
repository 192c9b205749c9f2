/* ANTAP's configuration: defaults, bounds, PredModule widths, JSON. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "antap/model.h"
#include "common/json.h"

#define MAX_FFN 8192

void
cq_antap_config_default(cq_antap_config *c)
{
	c->pool_rows = 32;
	c->pool_cols = 32;
	c->seq_len = 16;
	c->d_model = 32;
	c->heads = 4;
	c->ffn_dim = 64;
	c->pred_factor = 4;
}

int
cq_antap_pred_dims(const cq_antap_config *c, int dims[CQ_ANTAP_MAX_PRED + 1])
{
	int			n = 0;

	dims[0] = c->seq_len * c->d_model;
	while (dims[n] > c->pred_factor && n < CQ_ANTAP_MAX_PRED - 1)
	{
		dims[n + 1] = (dims[n] + c->pred_factor - 1) / c->pred_factor;
		n++;
	}
	dims[++n] = 1;
	return n;
}

/* Names and bounds of the integer keys, in JSON order. */
typedef struct key
{
	const char *name;
	size_t		offset;
	int			lo,
				hi;
} key;

static const key keys[] = {
	{"pool_rows", offsetof(cq_antap_config, pool_rows), 1, CQ_ANTAP_MAX_POOL},
	{"pool_cols", offsetof(cq_antap_config, pool_cols), 1, CQ_ANTAP_MAX_POOL},
	{"seq_len", offsetof(cq_antap_config, seq_len), 1, CQ_ANTAP_MAX_DIM},
	{"d_model", offsetof(cq_antap_config, d_model), 1, CQ_ANTAP_MAX_DIM},
	{"heads", offsetof(cq_antap_config, heads), 1, 64},
	{"ffn_dim", offsetof(cq_antap_config, ffn_dim), 1, MAX_FFN},
	{"pred_factor", offsetof(cq_antap_config, pred_factor), 2, 1 << 14},
};

#define N_KEYS ((int) (sizeof(keys) / sizeof(keys[0])))

static int
get(const cq_antap_config *c, const key *k)
{
	return *(const int *) ((const char *) c + k->offset);
}

size_t
cq_antap_config_params(const cq_antap_config *c)
{
	int			dims[CQ_ANTAP_MAX_PRED + 1],
				n = cq_antap_pred_dims(c, dims);
	size_t		H = c->pool_rows,
				W = c->pool_cols,
				S = c->seq_len,
				D = c->d_model,
				F = c->ffn_dim,
				p = S * W + S + D * H + D + 2 * D + 3 * D * D + 3 * D + D * D + D +
				F * D + F + D * F + D;

	for (int i = 0; i < n; i++)
		p += (size_t) dims[i + 1] * dims[i] + dims[i + 1];
	return p;
}

cq_code
cq_antap_config_validate(const cq_antap_config *c, cq_error *err)
{
	/*
	 * PredModule needs ceil(log_factor(S*D)) <= 14 < CQ_ANTAP_MAX_PRED layers
	 * under these bounds (factor >= 2, S*D <= 2^14).
	 */
	for (int i = 0; i < N_KEYS; i++)
		if (get(c, &keys[i]) < keys[i].lo || get(c, &keys[i]) > keys[i].hi)
			return cq_fail(err, CQ_EINVAL, "%s must be an integer from %d to %d, not %d",
						   keys[i].name, keys[i].lo, keys[i].hi, get(c, &keys[i]));
	if ((long) c->pool_rows * c->pool_cols > CQ_ANTAP_MAX_POOL_CELLS)
		return cq_fail(err, CQ_EINVAL, "pool_rows * pool_cols must be at most %d, not %ld",
					   CQ_ANTAP_MAX_POOL_CELLS, (long) c->pool_rows * c->pool_cols);
	if (c->d_model % c->heads != 0)
		return cq_fail(err, CQ_EINVAL, "d_model (%d) must be a multiple of heads (%d)",
					   c->d_model, c->heads);
	if ((long) c->seq_len * c->d_model > CQ_ANTAP_MAX_FLAT)
		return cq_fail(err, CQ_EINVAL, "seq_len * d_model must be at most %d, not %ld",
					   CQ_ANTAP_MAX_FLAT, (long) c->seq_len * c->d_model);
	if (cq_antap_config_params(c) > CQ_ANTAP_MAX_PARAMS)
		return cq_fail(err, CQ_ELIMIT, "the configuration has %zu parameters, more than %d",
					   cq_antap_config_params(c), CQ_ANTAP_MAX_PARAMS);
	return CQ_OK;
}

size_t
cq_antap_config_to_json(const cq_antap_config *c, char *buf, size_t size)
{
	size_t		n = 0;
	int			w = snprintf(buf, size, "{\"model\": \"antap\"");

	for (int i = 0; i < N_KEYS && w >= 0; i++)
	{
		n += (size_t) w;
		w = snprintf(buf + (n < size ? n : size), n < size ? size - n : 0, ", \"%s\": %d",
					 keys[i].name, get(c, &keys[i]));
	}
	if (w < 0)
		return 0;
	n += (size_t) w;
	w = snprintf(buf + (n < size ? n : size), n < size ? size - n : 0, "}");
	return n + (size_t) (w < 0 ? 0 : w);
}

cq_code
cq_antap_config_from_json(const char *text, size_t len, cq_antap_config *c, cq_error *err)
{
	cq_json_object obj;
	cq_error	jerr;
	cq_code		rc;
	const cq_json_member *kind;

	if ((rc = cq_json_parse_object(text, len, &obj, &jerr)) != CQ_OK)
		return rc == CQ_ENOMEM ? cq_fail(err, rc, "%s", jerr.msg) :
			cq_fail(err, CQ_EFORMAT, "ANTAP configuration is not valid JSON: %s", jerr.msg);
	kind = cq_json_get(&obj, "model");
	if (!kind || kind->type != CQ_JSON_STRING || strcmp(kind->string, "antap") != 0)
		rc = cq_fail(err, CQ_EFORMAT, "ANTAP configuration lacks \"model\": \"antap\"");
	for (int i = 0; i < N_KEYS && rc == CQ_OK; i++)
	{
		const cq_json_member *m = cq_json_get(&obj, keys[i].name);

		if (!m)
			rc = cq_fail(err, CQ_EFORMAT, "ANTAP configuration lacks \"%s\"", keys[i].name);
		else if (m->type != CQ_JSON_NUMBER || !(fabs(m->number) <= INT_MAX) ||
				 m->number != floor(m->number))
			rc = cq_fail(err, CQ_EFORMAT, "ANTAP configuration key \"%s\" is not an integer",
						 keys[i].name);
		else
			*(int *) ((char *) c + keys[i].offset) = (int) m->number;
	}
	for (int j = 0; j < obj.n && rc == CQ_OK; j++)
	{
		bool		known = strcmp(obj.members[j].key, "model") == 0;

		for (int i = 0; i < N_KEYS; i++)
			known |= strcmp(obj.members[j].key, keys[i].name) == 0;
		if (!known)
			rc = cq_fail(err, CQ_EFORMAT, "ANTAP configuration has an unknown key \"%s\"",
						 obj.members[j].key);
	}
	cq_json_free(&obj);
	if (rc == CQ_OK && (rc = cq_antap_config_validate(c, err)) == CQ_EINVAL)
	{
		/* a stored configuration out of range is a malformed file */
		rc = CQ_EFORMAT;
		if (err)
			err->code = rc;
	}
	return rc;
}
