from django.urls import path

from . import views

app_name = "jobs"
urlpatterns = [
    path("jobs/", views.job_list, name="list"),
    path("jobs/new/", views.submit, name="submit"),
    path("jobs/<int:pk>/", views.detail, name="detail"),
    path("jobs/<int:pk>/progress.json", views.progress, name="progress"),
    path("jobs/<int:pk>/cancel/", views.cancel, name="cancel"),
    path("workers/", views.workers, name="workers"),
    path("profile/", views.profile, name="profile"),
]
