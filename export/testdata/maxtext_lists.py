"""Regenerates the MaxText lists the export is tested against.

Run it in a checkout of AI-Hypercomputer/maxtext (the commit named in the
files' headers), from this directory:

  python3 maxtext_lists.py names  MAXTEXT > maxtext-model-names.txt
  python3 maxtext_lists.py schema MAXTEXT > maxtext-schema-keys.txt
  python3 maxtext_lists.py models MAXTEXT > maxtext-model-configs.txt

It reads src/maxtext/configs/types.py with Python's ast module (importing it
would need JAX) and the model configs with PyYAML; nothing of MaxText runs.
"""

import ast
import json
import os
import subprocess
import sys

kind, root = sys.argv[1], sys.argv[2]
configs = os.path.join(root, 'src', 'maxtext', 'configs')
commit = subprocess.run(['git', '-C', root, 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout.strip()
types_py = os.path.join(configs, 'types.py')
tree = ast.parse(open(types_py).read())


def literal_names():
    """The strings of the ModelName Literal, with its line range."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', '') == 'ModelName':
            names = [e.value for e in node.value.slice.elts]
            return names, node.lineno, node.end_lineno
    raise SystemExit('no ModelName in types.py')


def schema_fields():
    """The fields pydantic gives MaxTextConfig: the annotated names of the
    class and of every base class it lists, recursively (extra='forbid')."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    fields, seen = set(), set()

    def walk(name):
        if name in seen or name not in classes:
            return
        seen.add(name)
        c = classes[name]
        for b in c.bases:
            walk(getattr(b, 'id', ''))
        for s in c.body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id != 'model_config':
                fields.add(s.target.id)

    walk('MaxTextConfig')
    return sorted(fields), classes['MaxTextConfig'].lineno


def value(v):
    return json.dumps(v, separators=(',', ':'))


if kind == 'names':
    names, a, b = literal_names()
    print(f'# AI-Hypercomputer/maxtext src/maxtext/configs/types.py @ {commit} lines {a}-{b}: '
          'ModelName, the values RunInfo.model_name accepts (made by testdata/maxtext_lists.py names)')
    for n in names:
        print(n)
elif kind == 'schema':
    fields, line = schema_fields()
    print(f'# AI-Hypercomputer/maxtext src/maxtext/configs/types.py @ {commit}: the fields of MaxTextConfig '
          f'(line {line}, extra="forbid") and of its base classes, the keys pyconfig.py accepts '
          '(made by testdata/maxtext_lists.py schema)')
    for f in fields:
        print(f)
elif kind == 'models':
    import yaml
    base = yaml.safe_load(open(os.path.join(configs, 'base.yml')))
    print(f'# AI-Hypercomputer/maxtext src/maxtext/configs/models/NAME.yml and base.yml @ {commit}: '
          'one row a config, its name then every key it sets as key=JSON value; the row base.yml has '
          "base.yml's values of the keys the model configs set (made by testdata/maxtext_lists.py models)")
    rows, keys = [], set()
    mdir = os.path.join(configs, 'models')
    for f in sorted(os.listdir(mdir)):
        if not f.endswith('.yml'):
            continue
        cfg = yaml.safe_load(open(os.path.join(mdir, f))) or {}
        keys |= set(cfg)
        rows.append((f[:-4], cfg))
    # the sharding rules are not the model's architecture, and long
    skip = {'logical_axis_rules', 'data_sharding'}
    print('base.yml ' + ' '.join(f'{k}={value(base[k])}' for k in sorted(keys) if k in base and k not in skip))
    for name, cfg in rows:
        print(name + ' ' + ' '.join(f'{k}={value(v)}' for k, v in cfg.items()))
else:
    raise SystemExit('want names, schema or models')
