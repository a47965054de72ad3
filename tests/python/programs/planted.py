"""Puts symbolic links where tracetop's writer will create the files of the next threads' streams
(trace/<pid>/1.tts ... 4.tts of the experiment EXP), to the file TARGET, as another local user could in an
experiment directory of theirs; then starts a thread.

    planted.py EXP TARGET
"""

import os
import sys
import threading

experiment, target = sys.argv[1:3]
for stream in range(1, 5):
    os.symlink(target, os.path.join(experiment, "trace", str(os.getpid()), f"{stream}.tts"))
thread = threading.Thread(target=sum, args=(range(1000),))
thread.start()
thread.join()
print("ran")
