-- ---------------------------------------------------------------------------
-- Curation (docs/curation.md): the pair-quality classifier's synthetic noise.
-- It reads user queries, so it is STABLE and PARALLEL RESTRICTED as
-- mine_pairs is.
-- ---------------------------------------------------------------------------
CREATE FUNCTION corpq.synthetic_noise(clean_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src text, tgt text, label text)
    AS 'MODULE_PATHNAME', 'corpq_synthetic_noise'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.synthetic_noise(text, jsonb) IS
    'labelled negatives made from clean pairs, deterministic by seed: clean_query returns (src, tgt) (rows with a NULL side skipped); the result is every clean pair (label clean) in query order, then for each type round(share * pairs) noisy pairs labelled misaligned_neighbour, misaligned_random, truncated_tgt, truncated_src (30-70% of the words kept), appended_tgt, appended_src, untranslated, untranslated_edited, wrong_language (targets from other_language_query, one text column; none without it), markup (tags added to one side); options seed (1), one share per type (0..10; defaults 0.15, 0.15, 0.15, 0.15, 0.10, 0.05, 0.10, 0.10, 0.15, 0.05), other_language_query';

-- ---------------------------------------------------------------------------
-- The pair-quality classifier (docs/curation.md): a catalog with immutable
-- versions like corpq.model_catalog's, written by the classifier_train job
-- only.  A version holds the classifier's bytes (extension/curate/FORMAT.md),
-- its CRC-32 trailer, the features in layout order, the model versions its
-- model features were computed with (pinned name@N; a lexicon as
-- name@its version count), the
-- resolved options and the held-out report.  Same sharing rules as the other
-- catalogs: every role reads, members of the owner role write, through
-- corpq's functions only.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.classifier_catalog (
    id      bigserial PRIMARY KEY,
    name    text NOT NULL UNIQUE CHECK (name OPERATOR(pg_catalog.<>) '' AND pg_catalog.strpos(name, '@') OPERATOR(pg_catalog.=) 0),
    owner   regrole NOT NULL,
    created timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE corpq.classifier_catalog IS
    'pair-quality classifiers: name (no @) and owner; versions are in corpq.classifier_versions';

CREATE TABLE corpq.classifier_versions (
    model      bigint NOT NULL REFERENCES corpq.classifier_catalog (id) ON DELETE CASCADE,
    version    int NOT NULL CHECK (version OPERATOR(pg_catalog.>=) 1),
    classifier bytea NOT NULL,
    checksum   bigint NOT NULL,
    kind       text NOT NULL CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['trees', 'logistic']::pg_catalog.text[])),
    features   text[] NOT NULL,
    models     jsonb NOT NULL,
    options    jsonb NOT NULL,
    report     jsonb NOT NULL,
    job        bigint,
    created    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (model, version)
);
COMMENT ON TABLE corpq.classifier_versions IS
    'immutable classifier versions: the serialised classifier (extension/curate/FORMAT.md) and its CRC-32 trailer, kind (trees or logistic), feature names in layout order, the pinned models of its model features ({"encoder": "enc@3", "forward": ..., "backward": ..., "lexicon": "lex@1", a lexicon with its corpq.lexicons.version}), resolved training options, the held-out report, the training job';

SELECT pg_catalog.pg_extension_config_dump('corpq.classifier_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.classifier_versions', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.classifier_catalog_id_seq', '');

-- Everyone reads; only the classifier_train job and corpq.classifier_drop() write.
ALTER TABLE corpq.classifier_catalog ENABLE ROW LEVEL SECURITY;
CREATE POLICY classifier_catalog_read ON corpq.classifier_catalog FOR SELECT USING (true);
ALTER TABLE corpq.classifier_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY classifier_versions_read ON corpq.classifier_versions FOR SELECT USING (true);
GRANT SELECT ON corpq.classifier_catalog, corpq.classifier_versions TO PUBLIC;

CREATE VIEW corpq.classifiers WITH (security_invoker = true) AS
SELECT c.name,
       v.version AS latest_version,
       (SELECT pg_catalog.count(*) FROM corpq.classifier_versions w
         WHERE w.model OPERATOR(pg_catalog.=) c.id)::int AS versions,
       v.kind, v.features, v.models,
       (v.report -> 'heldout' ->> 'clean_kept')::float8 AS heldout_clean_kept,
       (v.report -> 'heldout' ->> 'min_auc')::float8 AS heldout_min_auc,
       (v.report -> 'heldout' ->> 'min_removed')::float8 AS heldout_min_removed,
       c.owner, c.created, c.updated
  FROM corpq.classifier_catalog c
  LEFT JOIN LATERAL (SELECT w.version, w.kind, w.features, w.models, w.report
                       FROM corpq.classifier_versions w
                      WHERE w.model OPERATOR(pg_catalog.=) c.id
                      ORDER BY w.version DESC LIMIT 1) v ON true;
COMMENT ON VIEW corpq.classifiers IS
    'one row per classifier: its latest version, version count, kind, features, pinned models, and from the latest version''s held-out report the share of clean pairs kept at 0.5, the smallest ROC AUC and the smallest share removed over the noise types; corpq.classifier_versions.report has the rest';
GRANT SELECT ON corpq.classifiers TO PUBLIC;

CREATE FUNCTION corpq.classifier_train(name text, clean_query text, options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_classifier_train'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.classifier_train(text, text, jsonb) IS
    'start a background job that trains the next version of pair-quality classifier name: clean_query is a SELECT of (src text, tgt text) run with the caller''s privileges; synthetic noise is made from its pairs, features computed, a classifier fitted and Platt-calibrated on a held-out split by pair; returns the job id. Options: src_lang, tgt_lang (CLD2 codes: language ID features), encoder, forward and backward (both or neither), lexicon, other_language_query, noise (shares by noise label), seed, max_pairs, holdout, classifier (trees or logistic), max_seconds, threads';

CREATE FUNCTION corpq.pair_quality(classifier text, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_pair_quality'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.pair_quality(text, text, text) IS
    'the calibrated probability in [0, 1] that (src, tgt) is a clean mutual translation, by classifier name (its latest version, resolved once per query) or name@N; NULL when a model feature is NULL (a side too long for the encoder or translation models)';

CREATE FUNCTION corpq.pair_quality(classifier corpq.pinned_model, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_pair_quality_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.pair_quality(corpq.pinned_model, text, text) IS
    'pair_quality with a pinned classifier version name@N (the corpq.pinned_model type serves classifiers too): a version and the model versions it pins never change, so the function is IMMUTABLE';

CREATE FUNCTION corpq.classifier_features(classifier text, src text, tgt text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'corpq_classifier_features'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.classifier_features(text, text, text) IS
    'the feature vector classifier (name or name@N) computes for (src, tgt), as {feature: value} (corpq.classifier_versions.features has the layout order); model features are the SQL functions'' own values (embedding_cosine, dual_xent, align_score, coverage on the pinned models), null where such a function returns NULL';

CREATE FUNCTION corpq.classifier_drop(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'corpq_classifier_drop'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.classifier_drop(text) IS
    'drop a classifier you own with all its versions; its version numbers are never issued again under the name';

-- curate() below
-- curate() below
-- ---------------------------------------------------------------------------
-- corpq.curate(): one call that curates a table, a row job (docs/curation.md,
-- "One call: curate()"): rules and language ID, copies, exact and near
-- duplicates over the whole corpus, then the classifier (pair_quality) on the
-- pairs left; (id, decision, probability, reasons) into the caller's table.
-- ---------------------------------------------------------------------------
CREATE DOMAIN corpq.reason_list AS text[];
COMMENT ON DOMAIN corpq.reason_list IS
    'text[] as curate() writes its reasons: the row jobs pass a chunk''s values as one array per column, and PostgreSQL has arrays of domains but no arrays of arrays';

CREATE FUNCTION corpq.curate(corpus regclass, target regclass, options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_curate'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.curate(regclass, regclass, jsonb) IS
    'curate the table corpus (columns id, src, tgt; options id_column, src_column, tgt_column) as a background row job that inserts (id, decision, probability, reasons) into target (id bigint, decision text, probability double precision, reasons text[]) in committed chunks; returns the job id at once.  Steps, cheap first: a NULL side (null:src, null:tgt), a side without a word (empty:src, empty:tgt), the rule filters of the option filters (default corpq.filter_defaults(); rule:<label>), language ID with src_lang / tgt_lang (langid:src, langid:tgt), a copy (copy); among the pairs kept, duplicates by dedup_key (option dedup: near (default, exact too), exact, none; the smallest id kept, the others duplicate_of:<id> or near_duplicate_of:<id>); then with a classifier (name or name@N) corpq.pair_quality, dropped below threshold (0.5; classifier:<p>).  Options also chunk_rows, threads, skip_existing, foreign_target';
