-- corpq.version(): the catalog's version (pg_extension) and the library's
-- agree after CREATE EXTENSION; the build is a git description or the
-- release; the CPU paths are the variants this process runs (machine-specific:
-- only their form is checked, and that they are the ones blas_info() reports).
SELECT extension = (SELECT extversion FROM pg_extension WHERE extname = 'corpq') AS catalog_version,
       extension = library AS library_matches,
       library ~ '^\d+\.\d+\.\d+$' AS version_form,
       build ~ '^(v?\d+\.\d+\.\d+(-\d+-g[0-9a-f]+)?|[0-9a-f]{12})(-dirty)?$' AS build_form,
       inference_kernel = (SELECT b.inference_kernel FROM corpq.blas_info() b) AS inference_kernel,
       int8_kernel ~ '^(portable|avx[a-z0-9]*)$' AS int8_kernel_form,
       blas_core = (SELECT b.core FROM corpq.blas_info() b) AS blas_core
  FROM corpq.version();
-- one row, six columns, callable by any role
SELECT (SELECT count(*) FROM corpq.version()) AS rows,
       (SELECT count(*) FROM corpq.version() v, jsonb_object_keys(to_jsonb(v))) AS columns;
SELECT has_function_privilege('public', 'corpq.version()', 'EXECUTE') AS public_may_call;
