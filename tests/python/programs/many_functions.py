"""Many distinct small functions, each called once from the module: a flat profile and a call tree longer than
the viewer shows at once."""
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 3100
functions = []
for i in range(count):
    namespace = {}
    exec("def function_%d(n):\n    return n + 1\n" % i, namespace)
    functions.append(namespace["function_%d" % i])
total = 0
for function in functions:
    total = function(total)
print("many_functions", total)
