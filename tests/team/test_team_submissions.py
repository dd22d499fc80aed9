"""What the team's job service refuses in a sent workload before it asks the hub or MLflow anything: an artifact
location on this machine's disks, where the service would write for the caller."""

from __future__ import annotations

import pytest

from jupyter_air.team.submissions import submit_sent
from jupyter_air.workloads.jobs.jobs import SubmitError
from jupyter_air.workloads.state.permissions import Caller
from jupyter_air.workloads.surfaces.jobs_view import JobsView


class Team:
    """The hub's users, as the service's directory knows them."""

    def has_user(self, name: str) -> bool:
        return name == "bob"

    def has_group(self, name: str) -> bool:
        return False


@pytest.mark.parametrize("location", ["file:///root/.ssh", "FILE://localhost/srv/art", "out", "/srv/art"])
def test_a_local_artifact_location_is_refused_naming_the_field_and_the_fix(tmp_path, location):
    # Given bob's workload naming an artifact location on the service's own disks
    text = f"experiment_name: team-local\ncommand: 'true'\nmlflow_artifact_location: {location}\n"
    text += "compute:\n  num_accelerators: 0\n"
    view = JobsView(tmp_path / "air", caller=Caller("bob"), directory=Team())
    body = {"workload": text, "path": str(tmp_path / "train.yaml"), "label": "train.yaml"}

    # When he sends it to the service, Then it is refused: the field, why, and what to give instead
    with pytest.raises(SubmitError) as refused:
        submit_sent(view, body)
    [problem] = refused.value.problems
    assert problem.startswith("train.yaml: mlflow_artifact_location: ")
    assert "is a local folder, where the team's job service would write for you" in problem
    assert "takes a URI of a remote artifact store (s3://bucket/path" in problem
    assert "leave the field out for the tracking server's default" in problem
    # And nothing was created
    assert not (tmp_path / "air").exists()
