
-- ---------------------------------------------------------------------------
-- ANTAP (CAV paper, Sec. 3.2; models/ANTAP.md): predicting a target token's
-- teacher-forced translation accuracy from its Corpus Analysis Vector.
-- corpq.antap_train() trains a new version in a background job; every
-- version keeps both states of the paper (State I: the best validation
-- checkpoint; State II: the last one), the resolved options, the job's
-- result, and every token's split, accuracy and predictions.  Same sharing
-- rules as the other catalogs: every role reads, members of the owner role
-- write, through corpq's functions only.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.antap_models (
    id      bigserial PRIMARY KEY,
    name    text NOT NULL UNIQUE CHECK (name OPERATOR(pg_catalog.<>) '' AND pg_catalog.strpos(name, '@') OPERATOR(pg_catalog.=) 0),
    owner   regrole NOT NULL,
    created timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE corpq.antap_models IS
    'ANTAP models: name (no @) and owner; versions are in corpq.antap_versions';

CREATE TABLE corpq.antap_versions (
    model       bigint NOT NULL REFERENCES corpq.antap_models (id) ON DELETE CASCADE,
    version     int NOT NULL CHECK (version OPERATOR(pg_catalog.>=) 1),
    config      jsonb NOT NULL,
    options     jsonb NOT NULL,
    state_i     bytea NOT NULL,
    state_ii    bytea NOT NULL,
    checksum_i  bigint NOT NULL,
    checksum_ii bigint NOT NULL,
    result      jsonb NOT NULL,
    job         bigint,
    created     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (model, version)
);
ALTER TABLE corpq.antap_versions ALTER COLUMN state_i SET STORAGE EXTERNAL;
ALTER TABLE corpq.antap_versions ALTER COLUMN state_ii SET STORAGE EXTERNAL;
COMMENT ON TABLE corpq.antap_versions IS
    'immutable ANTAP versions: architecture (config), resolved training options, the weight files of State I (best validation MSE) and State II (last epoch) with their CRC-32 trailers, the training job and its result (token counts, epochs, metrics per split and state)';

CREATE TABLE corpq.antap_tokens (
    model        bigint NOT NULL,
    version      int NOT NULL,
    token        text NOT NULL,
    split        text NOT NULL CHECK (split OPERATOR(pg_catalog.=) ANY (ARRAY['train', 'valid', 'test']::pg_catalog.text[])),
    accuracy     float8 NOT NULL,
    predicted_i  float8 NOT NULL,
    predicted_ii float8 NOT NULL,
    PRIMARY KEY (model, version, token),
    FOREIGN KEY (model, version) REFERENCES corpq.antap_versions (model, version) ON DELETE CASCADE
);
COMMENT ON TABLE corpq.antap_tokens IS
    'every token an ANTAP version was trained or evaluated on: its 8:1:1 split, the accuracy given, and the predictions of States I and II';

SELECT pg_catalog.pg_extension_config_dump('corpq.antap_models', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.antap_versions', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.antap_tokens', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.antap_models_id_seq', '');

-- Everyone reads; only the antap_train job and corpq.antap_drop() write.
ALTER TABLE corpq.antap_models ENABLE ROW LEVEL SECURITY;
CREATE POLICY antap_models_read ON corpq.antap_models FOR SELECT USING (true);
ALTER TABLE corpq.antap_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY antap_versions_read ON corpq.antap_versions FOR SELECT USING (true);
ALTER TABLE corpq.antap_tokens ENABLE ROW LEVEL SECURITY;
CREATE POLICY antap_tokens_read ON corpq.antap_tokens FOR SELECT USING (true);
GRANT SELECT ON corpq.antap_models, corpq.antap_versions, corpq.antap_tokens TO PUBLIC;

CREATE FUNCTION corpq.antap_train(name text, cavs text, accuracy text, options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_antap_train'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.antap_train(text, text, text, jsonb) IS
    'start a background job that trains the next version of ANTAP model name: cavs is a SELECT of (token text, cav corpq.cav), accuracy a SELECT of (token text, accuracy number), both run with the caller''s privileges; tokens with a CAV matrix and an accuracy are split 8:1:1 (seeded) and the others counted; returns the job id. Options: pool_rows, pool_cols, seq_len, d_model, heads, ffn_dim, pred_factor, lr, weight_decay, beta1, beta2, eps, batch_size, max_epochs, patience, seed';

CREATE FUNCTION corpq.antap_predict(name text, cav corpq.cav, token text, state text DEFAULT 'I')
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_antap_predict'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.antap_predict(text, corpq.cav, text, text) IS
    'the accuracy ANTAP model name (latest version, or name@N) predicts for token from its matrix in cav, with State I (best validation checkpoint, the default) or II (last checkpoint); NULL if cav has no matrix for token';

CREATE FUNCTION corpq.antap_eval(name text)
    RETURNS TABLE (split text, state text, mse float8, mae float8, rmse float8, r2 float8)
    AS 'MODULE_PATHNAME', 'corpq_antap_eval'
    LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 6;
COMMENT ON FUNCTION corpq.antap_eval(text) IS
    'MSE, MAE, RMSE and R^2 (1 - SSE/SST about the split''s mean; NULL when SST is 0) of ANTAP model name (latest version, or name@N) per split (train, valid, test) and state (I, II), from corpq.antap_tokens';

CREATE FUNCTION corpq.antap_drop(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'corpq_antap_drop'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.antap_drop(text) IS
    'drop an ANTAP model you own with all its versions and tokens';
