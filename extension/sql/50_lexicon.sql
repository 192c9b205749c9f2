
-- ---------------------------------------------------------------------------
-- Bilingual lexicons: fast_align (or IBM Model 1) trained in both directions
-- by a background job, symmetrised, and the UncSamp dictionary built from the
-- symmetrised links.  Every role can read and use every lexicon; only members
-- of a lexicon's owner role (and superusers) can replace or drop it, through
-- corpq.lexicon_train() and corpq.lexicon_drop().  A
-- training writes all of its rows in one transaction at its end, so readers
-- see either the previous version of a lexicon or the new one, never a mix.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.lexicons (
    name     text PRIMARY KEY CHECK (name OPERATOR(pg_catalog.<>) ''),
    owner    regrole NOT NULL DEFAULT current_user::regrole,
    version  int NOT NULL DEFAULT 1 CHECK (version OPERATOR(pg_catalog.>=) 1),
    options  jsonb NOT NULL,
    stats    jsonb NOT NULL,
    job      bigint,
    created  timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE corpq.lexicons IS
    'bilingual lexicons: resolved training options, training statistics, version (1 + number of replacements), the job that trained it';

-- fast_align's ttable, pruned as fast_align prints it: per conditioning word,
-- entries with t < 1e-4 * (the row's largest t) are dropped (its default
-- beam threshold -4, log10).  direction 'src-tgt': prob = t(tgt | src);
-- 'tgt-src': prob = t(src | tgt).  The conditioning NULL word is a NULL token.
-- The row sets carry no foreign key (millions of per-row RI checks would
-- dominate the job's final transaction); a BEFORE DELETE trigger on
-- corpq.lexicons removes them, and names cannot be updated.
CREATE TABLE corpq.lexicon_translations (
    lexicon   text NOT NULL,
    direction text NOT NULL CHECK (direction OPERATOR(pg_catalog.=) ANY (ARRAY['src-tgt', 'tgt-src']::pg_catalog.text[])),
    src       text,
    tgt       text,
    prob      float8 NOT NULL CHECK (prob OPERATOR(pg_catalog.>) 0 AND prob OPERATOR(pg_catalog.<=) 1)
);
CREATE INDEX ON corpq.lexicon_translations (lexicon, direction, src);
COMMENT ON TABLE corpq.lexicon_translations IS
    'translation tables t(f|e) of both directions, pruned below 1e-4 of each row''s maximum; a NULL token is the NULL word';

-- UncSamp's dictionary (thesis ch. 6): symmetrised links counted over the
-- training corpus, prob = count / (links of src).
CREATE TABLE corpq.lexicon_dictionary (
    lexicon text NOT NULL,
    src     text NOT NULL,
    tgt     text NOT NULL,
    count   bigint NOT NULL CHECK (count OPERATOR(pg_catalog.>) 0),
    prob    float8 NOT NULL CHECK (prob OPERATOR(pg_catalog.>) 0 AND prob OPERATOR(pg_catalog.<=) 1),
    PRIMARY KEY (lexicon, src, tgt)
);
COMMENT ON TABLE corpq.lexicon_dictionary IS
    'symmetrised link counts: p(tgt|src) = count / sum over tgt of count';

CREATE TABLE corpq.lexicon_entropy (
    lexicon text NOT NULL,
    src     text NOT NULL,
    links   bigint NOT NULL CHECK (links OPERATOR(pg_catalog.>) 0),
    entropy float8 NOT NULL CHECK (entropy OPERATOR(pg_catalog.>=) 0),
    PRIMARY KEY (lexicon, src)
);
COMMENT ON TABLE corpq.lexicon_entropy IS
    'word translation entropy H(y|x) = -sum p ln p in nats (thesis Eq. 6.4), for source tokens with at least one link';

-- What the SQL functions load, in one row: the serialised core models (both
-- directions, entries t >= 1e-7), the token lists in id order, source-side corpus
-- counts (word_rarity) and per-source-token links and entropy (as arrays,
-- so that mono_uncertainty loads without scanning lexicon_entropy).
CREATE TABLE corpq.lexicon_models (
    lexicon     text PRIMARY KEY REFERENCES corpq.lexicons (name) ON DELETE CASCADE,
    model       bytea NOT NULL,
    src_tokens  text[] NOT NULL,
    tgt_tokens  text[] NOT NULL,
    src_counts  bigint[] NOT NULL,
    src_links   bigint[] NOT NULL,
    src_entropy float8[] NOT NULL
);
-- doubles do not compress: store the model uncompressed, out of line
ALTER TABLE corpq.lexicon_models ALTER COLUMN model SET STORAGE EXTERNAL;
COMMENT ON TABLE corpq.lexicon_models IS
    'serialised fast_align models and vocabularies of each lexicon, read by align(), align_score(), coverage(), mono_uncertainty(), word_rarity()';

SELECT pg_catalog.pg_extension_config_dump('corpq.lexicons', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.lexicon_translations', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.lexicon_dictionary', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.lexicon_entropy', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.lexicon_models', '');

-- Everyone reads; only the lexicon job and corpq.lexicon_drop() write.
ALTER TABLE corpq.lexicons ENABLE ROW LEVEL SECURITY;
CREATE POLICY lexicons_read ON corpq.lexicons FOR SELECT USING (true);
ALTER TABLE corpq.lexicon_translations ENABLE ROW LEVEL SECURITY;
CREATE POLICY lexicon_translations_read ON corpq.lexicon_translations FOR SELECT USING (true);
ALTER TABLE corpq.lexicon_dictionary ENABLE ROW LEVEL SECURITY;
CREATE POLICY lexicon_dictionary_read ON corpq.lexicon_dictionary FOR SELECT USING (true);
ALTER TABLE corpq.lexicon_entropy ENABLE ROW LEVEL SECURITY;
CREATE POLICY lexicon_entropy_read ON corpq.lexicon_entropy FOR SELECT USING (true);
ALTER TABLE corpq.lexicon_models ENABLE ROW LEVEL SECURITY;
CREATE POLICY lexicon_models_read ON corpq.lexicon_models FOR SELECT USING (true);
GRANT SELECT ON corpq.lexicons, corpq.lexicon_translations,
    corpq.lexicon_dictionary, corpq.lexicon_entropy, corpq.lexicon_models TO PUBLIC;

-- The row sets have no foreign key (above): the trigger removes them.
CREATE FUNCTION corpq.lexicon_delete_rows() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM corpq.lexicon_translations t WHERE t.lexicon = OLD.name;
    DELETE FROM corpq.lexicon_dictionary d WHERE d.lexicon = OLD.name;
    DELETE FROM corpq.lexicon_entropy e WHERE e.lexicon = OLD.name;
    RETURN OLD;
END
$$;
CREATE TRIGGER lexicon_delete_rows BEFORE DELETE ON corpq.lexicons
    FOR EACH ROW EXECUTE FUNCTION corpq.lexicon_delete_rows();

CREATE FUNCTION corpq.lexicon_train(name text, corpus text, options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_lexicon_train'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.lexicon_train(text, text, jsonb) IS
    'start a background job that trains lexicon name on corpus, a SELECT returning (src text, tgt text) run with the caller''s privileges; returns the job id (see corpq.job_wait, corpq.job_progress). Options: model (fast_align | ibm1), iterations, p0, tension, optimize_tension, variational_bayes, alpha, favor_diagonal, symmetrize (grow-diag-final-and | intersect | union), bpe, lowercase, replace';

CREATE FUNCTION corpq.lexicon_drop(name text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'corpq_lexicon_drop'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.lexicon_drop(text) IS
    'drop a lexicon and all its rows (owner only)';

CREATE FUNCTION corpq.align(lexicon text, src text, tgt text) RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_lexicon_align'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.align(text, text, text) IS
    'word alignment of a sentence pair as Pharaoh "i-j" (0-based token positions after the lexicon''s lowercasing and segmentation), both directions Viterbi-aligned and symmetrised as in training; '''' when a side is empty';

CREATE FUNCTION corpq.align_score(lexicon text, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_lexicon_align_score'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.align_score(text, text, text) IS
    '(fwd + rev) / 2 with fwd = (1/m) sum_j ln sum_i p(a_j = i) t(tgt_j | src_i) over the m target tokens (src->tgt model, NULL word included) and rev the same with the sides swapped (tgt->src model); fast_align''s log-likelihood per token without its length model; unseen words t = 1e-9; NULL when a side is empty';

CREATE FUNCTION corpq.coverage(lexicon text, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_lexicon_coverage'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.coverage(text, text, text) IS
    'share of source tokens with at least one link in the symmetrised alignment; NULL when a side is empty';

CREATE FUNCTION corpq.align_stats(lexicon text, src text, tgt text,
                                  OUT fwd_score float8, OUT rev_score float8,
                                  OUT src_coverage float8, OUT tgt_coverage float8,
                                  OUT src_tail float8, OUT tgt_tail float8)
    AS 'MODULE_PATHNAME', 'corpq_lexicon_align_stats'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.align_stats(text, text, text) IS
    'one alignment, its parts kept apart: fwd_score (1/m) sum_j ln sum_i p(a_j = i) t(tgt_j | src_i) over the target tokens, rev_score the same over the source tokens, src_coverage and tgt_coverage the share of each side''s tokens with a link in the symmetrised alignment (align_score = (fwd_score + rev_score) / 2, coverage = src_coverage), tgt_tail the mean of fwd_score''s per-token terms over the target''s last ceil(m/3) tokens minus their mean over its other tokens (0 for one token), src_tail the same for rev_score''s terms over the source (well below 0 when a side''s end is explained worse than its start: a sentence appended to it, the other side cut short); NULL when a side is empty';

CREATE FUNCTION corpq.mono_uncertainty(lexicon text, sentence text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_lexicon_mono_uncertainty'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.mono_uncertainty(text, text) IS
    'UncSamp monolingual uncertainty U(x) = (1/T) sum_t H(y|x_t) in nats over the source-side tokens (thesis Eq. 6.3); a token without dictionary links scores 1e-6 and counts in T (as the authors'' code); NULL for an empty sentence';

CREATE FUNCTION corpq.word_rarity(lexicon text, sentence text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_lexicon_word_rarity'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.word_rarity(text, text) IS
    'word rarity WR(x) = -(1/T) sum_t ln p(x_t), p = source-side token frequency in the training corpus / its token count (thesis Eq. 6.5); a token never seen in training gets p = 1 / token count (as if seen once); NULL for an empty sentence';
