"""Generate a small synthetic English-Spanish parallel corpus, deterministic.

Used when the Debian sources of the real corpus cannot be had (offline), and by
tests that need a corpus with a known structure.  Three domains of unequal size
(20:4:1 by default), each with its own vocabulary, sentences built from
templates whose words translate one to one (with a determiner agreement and a
subject-verb order swap, so alignments are not all monotone).
"""
import argparse
import random

COMMON = {"the": "el", "a": "un", "and": "y", "with": "con", "in": "en", "of": "de", "not": "no"}
DOMAINS = {
    "news": {
        "subj": {"government": "gobierno", "minister": "ministro", "council": "consejo", "president": "presidente",
                 "court": "tribunal", "bank": "banco", "city": "ciudad", "company": "empresa"},
        "verb": {"approves": "aprueba", "rejects": "rechaza", "announces": "anuncia", "reviews": "revisa",
                 "publishes": "publica", "delays": "retrasa"},
        "obj": {"law": "ley", "budget": "presupuesto", "report": "informe", "plan": "plan", "tax": "impuesto",
                "agreement": "acuerdo", "reform": "reforma"},
        "adj": {"new": "nuevo", "annual": "anual", "national": "nacional", "final": "final"},
    },
    "software": {
        "subj": {"program": "programa", "server": "servidor", "user": "usuario", "system": "sistema",
                 "process": "proceso", "package": "paquete"},
        "verb": {"opens": "abre", "deletes": "borra", "copies": "copia", "reads": "lee", "writes": "escribe",
                 "saves": "guarda"},
        "obj": {"file": "archivo", "directory": "directorio", "database": "base", "key": "clave",
                "message": "mensaje", "table": "tabla"},
        "adj": {"empty": "vacío", "hidden": "oculto", "invalid": "inválido", "temporary": "temporal"},
    },
    "bible": {
        "subj": {"king": "rey", "prophet": "profeta", "people": "pueblo", "priest": "sacerdote",
                 "servant": "siervo"},
        "verb": {"blesses": "bendice", "hears": "oye", "sees": "ve", "builds": "edifica", "keeps": "guarda"},
        "obj": {"house": "casa", "word": "palabra", "city": "ciudad", "altar": "altar", "law": "ley"},
        "adj": {"holy": "santo", "great": "grande", "old": "viejo"},
    },
}


def sentence(rng, lex):
    s, v, o = (rng.choice(sorted(lex[k])) for k in ("subj", "verb", "obj"))
    en, es = ["the", s, v, "the"], ["el", lex["subj"][s], lex["verb"][v], "el"]
    if rng.random() < 0.5:
        adj = rng.choice(sorted(lex["adj"]))
        en += [adj, o]
        es += [lex["obj"][o], lex["adj"][adj]]       # adjective after the noun
    else:
        en.append(o)
        es.append(lex["obj"][o])
    if rng.random() < 0.3:
        o2 = rng.choice(sorted(lex["obj"]))
        en += ["with", "a", o2]
        es += ["con", "un", lex["obj"][o2]]
    if rng.random() < 0.2:
        en.insert(2, "not")
        es.insert(2, "no")
    return " ".join(en) + " .", " ".join(es) + " ."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="news=6000,software=1200,bible=300")
    ap.add_argument("--seed", type=int, default=20261122)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("id\tdomain\tsrc\ttgt\n")
        for spec in args.sizes.split(","):
            domain, n = spec.split("=")
            for i in range(int(n)):
                src, tgt = sentence(rng, DOMAINS[domain])
                f.write(f"syn.{domain}.{i}\t{domain}\t{src}\t{tgt}\n")


if __name__ == "__main__":
    main()
