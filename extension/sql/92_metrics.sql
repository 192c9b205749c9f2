
-- ---- evaluation: BLEU and chrF, as sacreBLEU 2.x computes them -------------
-- Options (jsonb): BLEU {tokenize: 13a|intl|char|none, lowercase, smooth:
-- none|floor|add-k|exp, smooth_value, effective_order}; chrF {char_order,
-- word_order (2 = chrF++), beta, lowercase, whitespace, eps_smoothing}.
-- Everything here is IMMUTABLE: a score depends on its arguments only (the
-- character tables are compiled in), so it ships to postgres_fdw nodes.

-- The aggregate state: bigint[] [tag, options, option value, statistics...].
CREATE FUNCTION corpq.metrics_combine(bigint[], bigint[]) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'corpq_metrics_combine'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.metrics_combine(bigint[], bigint[]) IS
    'combine function of bleu() and chrf(): the sum of two partial states (ERROR if their options differ)';

CREATE FUNCTION corpq.bleu_trans(bigint[], text, text) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'corpq_bleu_trans'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.bleu_trans(bigint[], text, text, jsonb) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'corpq_bleu_trans'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.bleu_final(bigint[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_bleu_final'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.bleu_trans(bigint[], text, text) IS 'transition function of bleu()';
COMMENT ON FUNCTION corpq.bleu_trans(bigint[], text, text, jsonb) IS 'transition function of bleu()';
COMMENT ON FUNCTION corpq.bleu_final(bigint[]) IS 'final function of bleu(): the score of a state';

-- CREATE AGGREGATE takes no DEFAULTs, so the options are an overload.  The
-- transition functions are STRICT with state '{}': rows with a NULL argument
-- are skipped, and no row gives NULL.
CREATE AGGREGATE corpq.bleu(hyp text, ref text) (
    SFUNC = corpq.bleu_trans, STYPE = bigint[], INITCOND = '{}',
    FINALFUNC = corpq.bleu_final, COMBINEFUNC = corpq.metrics_combine, PARALLEL = SAFE);
CREATE AGGREGATE corpq.bleu(hyp text, ref text, options jsonb) (
    SFUNC = corpq.bleu_trans, STYPE = bigint[], INITCOND = '{}',
    FINALFUNC = corpq.bleu_final, COMBINEFUNC = corpq.metrics_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE corpq.bleu(text, text) IS
    'corpus BLEU of hypotheses against single references, sacreBLEU''s defaults (13a, mixed case, exp smoothing, 4-grams); rows with a NULL are skipped; NULL if none is left';
COMMENT ON AGGREGATE corpq.bleu(text, text, jsonb) IS
    'corpus BLEU with options {tokenize, lowercase, smooth, smooth_value, effective_order}, the same in every row';

CREATE FUNCTION corpq.chrf_trans(bigint[], text, text) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'corpq_chrf_trans'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.chrf_trans(bigint[], text, text, jsonb) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'corpq_chrf_trans'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.chrf_final(bigint[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_chrf_final'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.chrf_trans(bigint[], text, text) IS 'transition function of chrf()';
COMMENT ON FUNCTION corpq.chrf_trans(bigint[], text, text, jsonb) IS 'transition function of chrf()';
COMMENT ON FUNCTION corpq.chrf_final(bigint[]) IS 'final function of chrf(): the score of a state';

CREATE AGGREGATE corpq.chrf(hyp text, ref text) (
    SFUNC = corpq.chrf_trans, STYPE = bigint[], INITCOND = '{}',
    FINALFUNC = corpq.chrf_final, COMBINEFUNC = corpq.metrics_combine, PARALLEL = SAFE);
CREATE AGGREGATE corpq.chrf(hyp text, ref text, options jsonb) (
    SFUNC = corpq.chrf_trans, STYPE = bigint[], INITCOND = '{}',
    FINALFUNC = corpq.chrf_final, COMBINEFUNC = corpq.metrics_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE corpq.chrf(text, text) IS
    'corpus chrF2 (character 1..6-grams, whitespace removed, beta 2) against single references; rows with a NULL are skipped; NULL if none is left';
COMMENT ON AGGREGATE corpq.chrf(text, text, jsonb) IS
    'corpus chrF with options {char_order, word_order (2: chrF++), beta, lowercase, whitespace, eps_smoothing}, the same in every row';

CREATE FUNCTION corpq.sentence_bleu(hyp text, ref text, options jsonb DEFAULT '{}') RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sentence_bleu'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.sentence_bleu(text, text, jsonb) IS
    'BLEU of one sentence as sacreBLEU''s sentence_bleu: exp smoothing and the effective order by default';
CREATE FUNCTION corpq.sentence_chrf(hyp text, ref text, options jsonb DEFAULT '{}') RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sentence_chrf'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.sentence_chrf(text, text, jsonb) IS
    'chrF of one sentence as sacreBLEU''s sentence_chrf, with chrf()''s options';

CREATE FUNCTION corpq.bleu_signature(options jsonb DEFAULT '{}') RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_bleu_signature'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.bleu_signature(jsonb) IS
    'sacreBLEU''s signature for these BLEU options, e.g. nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0';
CREATE FUNCTION corpq.chrf_signature(options jsonb DEFAULT '{}') RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_chrf_signature'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.chrf_signature(jsonb) IS
    'sacreBLEU''s signature for these chrF options, e.g. nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0';

CREATE FUNCTION corpq.bleu_tokenize(t text, options jsonb DEFAULT '{}') RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_bleu_tokenize'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.bleu_tokenize(text, jsonb) IS
    'the tokens BLEU counts in t with these options (tokenize, lowercase), separated by single spaces';

-- ---- paired bootstrap resampling (Koehn, 2004; sacreBLEU's paired_bs) ------
CREATE TYPE corpq.bootstrap_result AS (
    score_a   float8,   -- system A on the whole test set
    score_b   float8,   -- system B
    p_value   float8,   -- (1 + #resamples with |B-A| - mean|B-A| > |score_b - score_a|) / (n + 1)
    mean_a    float8,   -- mean of A's resampled scores
    ci_a      float8,   -- half-width of their central 95 % interval (sacreBLEU's "+-")
    mean_b    float8,
    ci_b      float8,
    resamples int,
    segments  bigint    -- rows with a, b and ref not NULL
);
COMMENT ON TYPE corpq.bootstrap_result IS 'the result of corpq.paired_bootstrap()';

CREATE FUNCTION corpq.paired_bootstrap_trans(internal, text, text, text) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_paired_bootstrap_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.paired_bootstrap_trans(internal, text, text, text, int) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_paired_bootstrap_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.paired_bootstrap_trans(internal, text, text, text, int, bigint) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_paired_bootstrap_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.paired_bootstrap_trans(internal, text, text, text, int, bigint, jsonb) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_paired_bootstrap_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.paired_bootstrap_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_paired_bootstrap_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION corpq.paired_bootstrap_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'corpq_paired_bootstrap_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.paired_bootstrap_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'corpq_paired_bootstrap_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.paired_bootstrap_final(internal) RETURNS corpq.bootstrap_result
    AS 'MODULE_PATHNAME', 'corpq_paired_bootstrap_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE corpq.paired_bootstrap(system_a text, system_b text, ref text) (
    SFUNC = corpq.paired_bootstrap_trans, STYPE = internal,
    FINALFUNC = corpq.paired_bootstrap_final, COMBINEFUNC = corpq.paired_bootstrap_combine,
    SERIALFUNC = corpq.paired_bootstrap_serial, DESERIALFUNC = corpq.paired_bootstrap_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE corpq.paired_bootstrap(system_a text, system_b text, ref text, n int) (
    SFUNC = corpq.paired_bootstrap_trans, STYPE = internal,
    FINALFUNC = corpq.paired_bootstrap_final, COMBINEFUNC = corpq.paired_bootstrap_combine,
    SERIALFUNC = corpq.paired_bootstrap_serial, DESERIALFUNC = corpq.paired_bootstrap_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE corpq.paired_bootstrap(system_a text, system_b text, ref text, n int, seed bigint) (
    SFUNC = corpq.paired_bootstrap_trans, STYPE = internal,
    FINALFUNC = corpq.paired_bootstrap_final, COMBINEFUNC = corpq.paired_bootstrap_combine,
    SERIALFUNC = corpq.paired_bootstrap_serial, DESERIALFUNC = corpq.paired_bootstrap_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE corpq.paired_bootstrap(system_a text, system_b text, ref text, n int, seed bigint,
                                        options jsonb) (
    SFUNC = corpq.paired_bootstrap_trans, STYPE = internal,
    FINALFUNC = corpq.paired_bootstrap_final, COMBINEFUNC = corpq.paired_bootstrap_combine,
    SERIALFUNC = corpq.paired_bootstrap_serial, DESERIALFUNC = corpq.paired_bootstrap_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE corpq.paired_bootstrap(text, text, text) IS
    'paired bootstrap test of system B against system A on references ref: BLEU, 1000 resamples, seed 12345; rows with a NULL text are skipped';
COMMENT ON AGGREGATE corpq.paired_bootstrap(text, text, text, int) IS
    'paired bootstrap with n resamples (1 .. 1000000)';
COMMENT ON AGGREGATE corpq.paired_bootstrap(text, text, text, int, bigint) IS
    'paired bootstrap with n resamples drawn from Philox keyed by seed: the same result in any plan or process';
COMMENT ON AGGREGATE corpq.paired_bootstrap(text, text, text, int, bigint, jsonb) IS
    'paired bootstrap with options {metric: bleu|chrf, and that metric''s options}';
