"""JupyterHub's configuration for the course hub (`python -m grader hub` starts JupyterHub with
this file and COURSE_HUB_ROOT). What to change for a real term: README, "Running a course"."""

import os
from pathlib import Path

from grader.hub.config import server_environment
from grader.hub.layout import Hub
from grader.hub.links import handlers as classic_links

hub = Hub.load(Path(os.environ["COURSE_HUB_ROOT"]))
c = get_config()  # noqa: F821

c.JupyterHub.bind_url = hub.url
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{hub.hub_port}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{hub.api_port}"
c.JupyterHub.db_url = f"sqlite:///{hub.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(hub.state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(hub.state / "jupyterhub.pid")
c.ConfigurableHTTPProxy.command = [str(hub.proxy_command)]
c.ConfigurableHTTPProxy.pid_file = str(hub.state / "proxy.pid")

# Accounts: PAM, the machine's own Unix users and passwords (made by `make hub`). For a real
# term swap it for LTI (ltiauthenticator: the LMS logs students in) or an OAuth provider
# (oauthenticator); the rest stays as it is, as long as each hub user name is a Unix user.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False  # no login session (utmp, systemd) per server
c.Authenticator.admin_users = {hub.instructor}
c.Authenticator.allowed_users = set(hub.users)

# Servers: each user's own process, as their Unix user, on the course's runtime. A student's
# runs in its own control group with a private /tmp and /dev/shm (grader.hub.spawner), within
# the limits of hub.limits (grader.hub.layout.ServerLimits: saved in state/hub.json; any of
# these lines may be changed for a term). The instructor's server, which grades, has none.
c.JupyterHub.spawner_class = "grader.hub.spawner.ConfinedSpawner"
c.ConfinedSpawner.mem_limit = hub.limits.memory
c.ConfinedSpawner.cpu_limit = hub.limits.cpus
c.ConfinedSpawner.tasks_limit = hub.limits.tasks
c.ConfinedSpawner.tmp_size = hub.limits.tmp
c.ConfinedSpawner.shm_size = hub.limits.shm
c.ConfinedSpawner.cgroup_prefix = hub.root.name
c.ConfinedSpawner.unconfined_users = {hub.instructor}
c.Spawner.cmd = [str(hub.env / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
c.Spawner.env_keep = []  # nothing of the hub's own environment (root's) reaches a server


def per_role(spawner):
    user = spawner.user.name
    spawner.environment = server_environment(hub, user)
    if user == hub.instructor:
        spawner.notebook_dir = str(hub.instructor_root)  # the formgrader needs the course in it


c.Spawner.pre_spawn_hook = per_role

# The formgrader's links outside JupyterLab (/tree/PATH...) into the user's JupyterLab.
c.JupyterHub.extra_handlers = classic_links()
