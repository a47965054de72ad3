"""Many distinct functions with long names, each doing as much work as the others: a call tree whose names
alone outgrow a report's size limit, with no node too small to show."""
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 2500
work = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
functions = []
for i in range(count):
    name = "function_with_a_long_name_" + "x" * 3000 + "_%d" % i
    namespace = {}
    exec("def %s(n):\n    for i in range(%d):\n        n = (n * 31 + i) %% 1000003\n    return n\n" % (name, work),
         namespace)
    functions.append(namespace[name])
total = 0
for function in functions:
    total = function(total)
print("many_regions", total)
