"""tracetop.start() with options, stop() twice, and a second start() while measuring."""
import json
import sys

import tracetop

session = tracetop.start(sys.argv[1], memory="2M", profile=False, c_calls=False)
try:
    tracetop.start(sys.argv[1] + "-second")
except tracetop.TraceError as error:
    second = str(error)
stats = session.stop()
print(json.dumps({"stats": sorted(stats), "again": session.stop() == stats, "second": second}))
