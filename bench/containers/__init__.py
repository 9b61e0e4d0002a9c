"""What starts, places, builds and watches the containers: the scenario registry read from the compose files,
a running scenario, the roles on their Docker engines, cold image builds, and the processes, cgroups and Postgres
sessions sampled while a load runs."""
