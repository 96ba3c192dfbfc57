# setuptools builds in the folder it is given: its build/ and clsearch.egg-info would land in the
# source tree at every `pip install ./python`. This sends both to a temporary folder that goes
# with the process; pyproject.toml holds everything else.
import atexit
import os
import shutil
import tempfile

from setuptools import setup

work = tempfile.mkdtemp(prefix="clsearch-python-build-")
atexit.register(shutil.rmtree, work, True)
setup(options={"egg_info": {"egg_base": work}, "build": {"build_base": os.path.join(work, "build")}})
