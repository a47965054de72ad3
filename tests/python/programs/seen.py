"""Prints, as JSON, what a Python process sees of how it was started."""
import json
import os
import sys

print(json.dumps({"argv": sys.argv, "path": sys.path, "sitecustomize": os.environ.get("SITECUSTOMIZED"),
                  "main": sorted(name for name in vars(sys.modules["__main__"]) if not name.startswith("__"))}))
