#include "unit.h"
#include "common/crc32.h"
#include "common/json.h"
#include "nn/model/config.h"

TEST(json_flat_object)
{
	const char *t = " { \"a\" : 1.5e2, \"b\":\"x\\\"y\\n\\u0041\", \"c\": true, \"d\": false, \"e\": null } ";
	cq_json_object o;
	cq_error	err;

	CHECK_INT_EQ(cq_json_parse_object(t, strlen(t), &o, &err), CQ_OK);
	CHECK_INT_EQ(o.n, 5);
	CHECK_NEAR(cq_json_get(&o, "a")->number, 150.0, 0);
	CHECK_STR_EQ(cq_json_get(&o, "b")->string, "x\"y\nA");
	CHECK(cq_json_get(&o, "c")->boolean && cq_json_get(&o, "c")->type == CQ_JSON_BOOL);
	CHECK(!cq_json_get(&o, "d")->boolean);
	CHECK_INT_EQ(cq_json_get(&o, "e")->type, CQ_JSON_NULL);
	CHECK(cq_json_get(&o, "zz") == NULL);
	cq_json_free(&o);
}

TEST(json_rejects_malformed)
{
	const char *bad[] = {"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":1} x",
		"{\"a\":[1]}", "{\"a\":{}}", "{\"a\":\"unterminated}", "{\"a\":1e999}",
	"{\"a\":-}", "[1]", "{a:1}", "{\"a\":tru}", "{\"a\":\"\\q\"}"};
	cq_error	err;

	for (int i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
	{
		cq_json_object o;

		err.msg[0] = '\0';
		CHECK_INT_EQ(cq_json_parse_object(bad[i], strlen(bad[i]), &o, &err), CQ_EINVAL);
		CHECK_INT_EQ(err.code, CQ_EINVAL);
		CHECK(strncmp(err.msg, "at byte", 7) == 0);
	}
}

/* zlib's check value of CRC-32 and a split computation. */
TEST(crc32_check_value)
{
	CHECK_INT_EQ(cq_crc32(0, "123456789", 9), 0xCBF43926u);
	CHECK_INT_EQ(cq_crc32(cq_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
	CHECK_INT_EQ(cq_crc32(0, "", 0), 0);
}

TEST(crc32_combine_joins_pieces)
{
	unsigned char buf[5000];
	uint32_t	seed = 12345;

	for (size_t i = 0; i < sizeof(buf); i++)
	{
		seed = seed * 1103515245u + 12345u;
		buf[i] = (unsigned char) (seed >> 16);
	}
	CHECK_INT_EQ(cq_crc32_combine(cq_crc32(0, "1234", 4), cq_crc32(0, "56789", 5), 5), 0xCBF43926u);
	CHECK_INT_EQ(cq_crc32_combine(cq_crc32(0, "123456789", 9), 0, 0), 0xCBF43926u);
	CHECK_INT_EQ(cq_crc32_combine(0, cq_crc32(0, "123456789", 9), 9), 0xCBF43926u);
	/* every split point of a few lengths, and three pieces joined left to right */
	for (size_t len = 1; len <= sizeof(buf); len = len * 3 + 1)
		for (size_t cut = 0; cut <= len; cut += 1 + len / 17)
		{
			size_t		cut2 = cut + (len - cut) / 2;
			uint32_t	whole = cq_crc32(0, buf, len),
						joined = cq_crc32_combine(cq_crc32(0, buf, cut), cq_crc32(0, buf + cut, len - cut),
												  len - cut),
						three = cq_crc32_combine(cq_crc32_combine(cq_crc32(0, buf, cut),
																  cq_crc32(0, buf + cut, cut2 - cut),
																  cut2 - cut),
												 cq_crc32(0, buf + cut2, len - cut2), len - cut2);

			CHECK_INT_EQ(joined, whole);
			CHECK_INT_EQ(three, whole);
		}
}

static char *
read_text(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	static char buf[4096];

	if (!f)
		return NULL;
	*len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

/* models/NAME.json (run from the repository root) = the built-in presets. */
TEST(config_presets_match_model_files)
{
	const char *names[] = {"tiny", "small", "base"};

	for (int i = 0; i < 3; i++)
	{
		char		path[64];
		size_t		len;
		char	   *text;
		cq_model_config a,
					b;
		cq_error err;

		snprintf(path, sizeof(path), "models/%s.json", names[i]);
		text = read_text(path, &len);
		CHECK(text != NULL);
		if (!text)
			continue;
		CHECK_INT_EQ(cq_config_from_preset_json(text, len, 1000, 1200, &a, &err), CQ_OK);
		CHECK_INT_EQ(cq_config_preset(names[i], 1000, 1200, &b, &err), CQ_OK);
		CHECK(cq_config_equal(&a, &b));
	}
}

TEST(config_json_round_trip_and_errors)
{
	cq_model_config c,
				back;
	cq_error err;
	char		buf[1024];
	size_t		n;

	CHECK_INT_EQ(cq_config_preset("small", 500, 600, &c, &err), CQ_OK);
	c.activation = CQ_ACT_GELU;
	c.positions = CQ_POS_LEARNED;
	c.tie_output = false;
	c.attention_dropout = 0.25f;
	n = cq_config_to_json(&c, buf, sizeof(buf));
	CHECK_INT_EQ(cq_config_from_json(buf, n, &back, &err), CQ_OK);
	CHECK(cq_config_equal(&c, &back));

	CHECK_INT_EQ(cq_config_preset("huge", 5, 5, &c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "tiny, small, base") != NULL);
	CHECK_INT_EQ(cq_config_from_json("{\"d_model\": 64}", 15, &c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "\"heads\" is missing") != NULL);

	/* each range rule */
	{
		struct
		{
			const char *from,
					   *to,
					   *msg;
		}			cases[] = {
			{"\"heads\": 4", "\"heads\": 3", "multiple of heads"},
			{"\"dropout\": 0.1", "\"dropout\": 1", "\"dropout\""},
			{"\"encoder_layers\": 3", "\"encoder_layers\": 0", "encoder_layers"},
			{"\"activation\": \"gelu\"", "\"activation\": \"tanh\"", "\"gelu\" or \"swish\""},
			{"\"tie_output\": false", "\"tie_output\": 0", "must be a boolean"},
			{"\"d_model\": 256", "\"d_model\": 256.5", "must be an integer"},
			{"\"src_vocab_size\": 500", "\"src_vocab_size\": 3", "src_vocab_size"},
			{"\"share_embeddings\": false", "\"share_embeddings\": true", "equal vocabulary"},
		};

		for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
		{
			char		edited[1100];
			char	   *at = strstr(buf, cases[i].from);

			CHECK(at != NULL);
			if (!at)
				continue;
			snprintf(edited, sizeof(edited), "%.*s%s%s", (int) (at - buf), buf, cases[i].to,
					 at + strlen(cases[i].from));
			CHECK_INT_EQ(cq_config_from_json(edited, strlen(edited), &c, &err), CQ_EINVAL);
			if (!strstr(err.msg, cases[i].msg))
				unit_fail(__FILE__, __LINE__, "case %d: message \"%s\"", i, err.msg);
		}
	}
}

/*
 * Numbers RFC 8259 does not allow (leading zero, plus sign, bare point,
 * empty exponent) and strings or keys that are not well-formed UTF-8 are
 * rejected (issue 31); well-formed ones still parse.
 */
TEST(json_rfc8259_numbers_and_utf8)
{
	const char *bad[] = {"{\"a\":034}", "{\"a\":00}", "{\"a\":-01}", "{\"a\":1.}", "{\"a\":.5}",
		"{\"a\":+1}", "{\"a\":1e}", "{\"a\":1e+}", "{\"a\":1.e5}", "{\"a\":--1}", "{\"a\":1-2}",
		"{\"\xff\":1}", "{\"a\":\"\xc3\"}", "{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}",
		"{\"a\":\"\xf4\x90\x80\x80\"}", "{\"\xe2\x82\":1}", "{\"a\":\"\\u+041\"}"};
	const char *good = "{\"a\":0, \"b\":-0.5, \"c\":1E+2, \"d\":10e-1, \"\xc3\xa9t\xc3\xa9\":\"\xe2\x82\xac\xf0\x9f\x98\x80\"}";
	cq_error	err;
	cq_json_object o;

	for (int i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
	{
		err.msg[0] = '\0';
		if (cq_json_parse_object(bad[i], strlen(bad[i]), &o, &err) == CQ_OK)
		{
			unit_fail(__FILE__, __LINE__, "accepted %s", bad[i]);
			cq_json_free(&o);
		}
		else
			CHECK(strncmp(err.msg, "at byte", 7) == 0);
	}
	CHECK(cq_json_parse_object(bad[0], strlen(bad[0]), &o, &err) == CQ_EINVAL &&
		  strstr(err.msg, "leading zero") != NULL);
	CHECK(cq_json_parse_object(bad[11], strlen(bad[11]), &o, &err) == CQ_EINVAL &&
		  strstr(err.msg, "UTF-8") != NULL);
	CHECK_INT_EQ(cq_json_parse_object(good, strlen(good), &o, &err), CQ_OK);
	CHECK_INT_EQ(o.n, 5);
	CHECK_NEAR(cq_json_get(&o, "b")->number, -0.5, 0);
	CHECK_NEAR(cq_json_get(&o, "c")->number, 100.0, 0);
	CHECK_STR_EQ(cq_json_get(&o, "\xc3\xa9t\xc3\xa9")->string, "\xe2\x82\xac\xf0\x9f\x98\x80");
	cq_json_free(&o);
}

/*
 * The architecture variants (models/FORMAT.md): absent keys mean corpq's own
 * architecture and are not written back; every non-default value survives a
 * round trip; bad values are configuration errors naming the key.
 */
TEST(config_json_variants)
{
	cq_model_config c,
				back;
	cq_error err;
	char		buf[1100];
	size_t		n;
	static const char *base = "{\"d_model\": 64, \"heads\": 4, \"encoder_layers\": 2, "
		"\"decoder_layers\": 2, \"ffn_dim\": 128, \"activation\": \"swish\", \"dropout\": 0.1, "
		"\"attention_dropout\": 0, \"activation_dropout\": 0, \"max_positions\": 64, "
		"\"positions\": \"sinusoidal\", \"tie_output\": true, \"share_embeddings\": true, "
		"\"src_vocab_size\": 50, \"tgt_vocab_size\": 50%s}";
	struct
	{
		const char *extra,
				   *msg;
	}			bad[] = {
		{", \"norm_position\": \"middle\"", "\"pre\" or \"post\""},
		{", \"decoder_start_id\": 50", "decoder_start_id"},
		{", \"position_offset\": -1", "position_offset"},
		{", \"layer_norm_eps\": 0", "layer_norm_eps"},
		{", \"sinusoid_denominator\": \"third\"", "\"half_minus_one\" or \"half\""},
		{", \"output_bias\": 1", "must be a boolean"},
		{", \"norm\": \"batch\"", "\"norm\" must be \"layer\" or \"rms\""},
	};

	snprintf(buf, sizeof(buf), base, "");
	CHECK_INT_EQ(cq_config_from_json(buf, strlen(buf), &c, &err), CQ_OK);
	CHECK(c.activation == CQ_ACT_SWISH && !c.post_norm && c.encoder_final_norm &&
		  c.decoder_final_norm && c.scale_embeddings && !c.layernorm_embedding &&
		  c.position_offset == 0 && !c.sinusoid_half && c.layer_norm_eps == 1e-5f &&
		  !c.output_bias && c.decoder_start_id == CQ_EOS_ID && c.norm == CQ_NORM_LAYER);
	n = cq_config_to_json(&c, buf, sizeof(buf));
	CHECK(strstr(buf, "norm_position") == NULL && strstr(buf, "decoder_start_id") == NULL &&
		  strstr(buf, "\"norm\"") == NULL);
	CHECK(strstr(buf, "\"activation\": \"swish\"") != NULL);

	snprintf(buf, sizeof(buf), base,
			 ", \"norm_position\": \"post\", \"encoder_final_norm\": false, "
			 "\"decoder_final_norm\": false, \"scale_embeddings\": false, "
			 "\"layernorm_embedding\": true, \"position_offset\": 2, "
			 "\"sinusoid_denominator\": \"half\", \"layer_norm_eps\": 1e-6, "
			 "\"output_bias\": true, \"decoder_start_id\": 1, \"norm\": \"rms\"");
	CHECK_INT_EQ(cq_config_from_json(buf, strlen(buf), &c, &err), CQ_OK);
	CHECK(c.post_norm && !c.encoder_final_norm && !c.decoder_final_norm &&
		  !c.scale_embeddings && c.layernorm_embedding && c.position_offset == 2 &&
		  c.sinusoid_half && c.layer_norm_eps == 1e-6f && c.output_bias &&
		  c.decoder_start_id == 1 && c.norm == CQ_NORM_RMS);
	n = cq_config_to_json(&c, buf, sizeof(buf));
	CHECK_INT_EQ(cq_config_from_json(buf, n, &back, &err), CQ_OK);
	CHECK(cq_config_equal(&c, &back));
	back.norm = CQ_NORM_LAYER;
	CHECK(!cq_config_equal(&c, &back));

	for (int i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
	{
		snprintf(buf, sizeof(buf), base, bad[i].extra);
		CHECK_INT_EQ(cq_config_from_json(buf, strlen(buf), &c, &err), CQ_EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			unit_fail(__FILE__, __LINE__, "bad case %d: message \"%s\"", i, err.msg);
	}
	/* learned tables are stored from token 0: no offset */
	snprintf(buf, sizeof(buf), base, ", \"position_offset\": 2");
	{
		char	   *at = strstr(buf, "\"sinusoidal\"");
		char		edited[1100];

		snprintf(edited, sizeof(edited), "%.*s\"learned\"%s", (int) (at - buf), buf,
				 at + strlen("\"sinusoidal\""));
		CHECK_INT_EQ(cq_config_from_json(edited, strlen(edited), &c, &err), CQ_EINVAL);
		CHECK(strstr(err.msg, "sinusoidal positions only") != NULL);
	}
}

/*
 * cq_config_arch_keys (what corpq.model_create accepts besides a preset) is
 * exactly the keys cq_config_to_json writes for a configuration whose every
 * variant differs from its default, less the vocabulary sizes and the
 * precision: a key added to the JSON but not to the list fails here.
 */
TEST(config_arch_keys_are_the_json_keys)
{
	cq_model_config c;
	cq_error	err;
	cq_json_object o;
	char		buf[1100],
				list[1100];
	int			listed = 1;

	CHECK_INT_EQ(cq_config_preset("tiny", 50, 60, &c, &err), CQ_OK);
	c.post_norm = c.layernorm_embedding = c.sinusoid_half = c.output_bias = true;
	c.encoder_final_norm = c.decoder_final_norm = c.scale_embeddings = false;
	c.position_offset = 2;
	c.layer_norm_eps = 1e-6f;
	c.decoder_start_id = 1;
	c.precision = CQ_PRECISION_INT8;
	c.norm = CQ_NORM_RMS;
	/* the encoder keys too (written only when they differ from the default) */
	c.kind = CQ_KIND_ENCODER;
	c.pooling = CQ_POOL_CLS;
	c.pooler = c.token_type_embedding = true;
	cq_config_to_json(&c, buf, sizeof(buf));
	CHECK_INT_EQ(cq_json_parse_object(buf, strlen(buf), &o, &err), CQ_OK);
	snprintf(list, sizeof(list), ",%s,", cq_config_arch_keys());
	for (const char *p = list + 1; *p; p++)
		listed += *p == ',';
	listed -= 1;
	for (int i = 0; i < o.n; i++)
	{
		char		key[64];
		bool		arch = strcmp(o.members[i].key, "src_vocab_size") != 0 &&
			strcmp(o.members[i].key, "tgt_vocab_size") != 0 &&
			strcmp(o.members[i].key, "precision") != 0;

		snprintf(key, sizeof(key), ",%s,", o.members[i].key);
		if (arch != (strstr(list, key) != NULL))
			unit_fail(__FILE__, __LINE__, "key %s is %s cq_config_arch_keys()",
					  o.members[i].key, arch ? "missing from" : "wrongly in");
		listed -= arch;
	}
	CHECK_INT_EQ(listed, 0);
	cq_json_free(&o);
}
